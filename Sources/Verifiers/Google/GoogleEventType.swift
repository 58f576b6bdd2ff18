import Events

/// RTDN notification types to the vocabulary (Sources/Events/EventType.swift), with Google's names for `sourceType`.
public enum GoogleEventType {
    /// `SubscriptionNotification.notificationType`: 1-13, 17-20, 22.
    static let subscriptionTypes: [Int64: (name: String, type: EventType)] = [
        1: ("SUBSCRIPTION_RECOVERED", .subscriptionRecovered),
        2: ("SUBSCRIPTION_RENEWED", .subscriptionRenewed),
        3: ("SUBSCRIPTION_CANCELED", .subscriptionAutoRenewDisabled),
        4: ("SUBSCRIPTION_PURCHASED", .subscriptionStarted),
        5: ("SUBSCRIPTION_ON_HOLD", .subscriptionOnHold),
        6: ("SUBSCRIPTION_IN_GRACE_PERIOD", .subscriptionBillingIssue),
        7: ("SUBSCRIPTION_RESTARTED", .subscriptionAutoRenewEnabled),
        8: ("SUBSCRIPTION_PRICE_CHANGE_CONFIRMED", .subscriptionPriceChange),
        9: ("SUBSCRIPTION_DEFERRED", .subscriptionExtended),
        10: ("SUBSCRIPTION_PAUSED", .subscriptionPaused),
        11: ("SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED", .subscriptionPauseScheduled),
        12: ("SUBSCRIPTION_REVOKED", .subscriptionRevoked),
        13: ("SUBSCRIPTION_EXPIRED", .subscriptionExpired),
        17: ("SUBSCRIPTION_ITEMS_CHANGED", .subscriptionPlanChanged),
        18: ("SUBSCRIPTION_CANCELLATION_SCHEDULED", .subscriptionAutoRenewDisabled),
        19: ("SUBSCRIPTION_PRICE_CHANGE_UPDATED", .subscriptionPriceChange),
        20: ("SUBSCRIPTION_PENDING_PURCHASE_CANCELED", .subscriptionPendingCanceled),
        22: ("SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED", .subscriptionPriceChange),
    ]

    /// `OneTimeProductNotification.notificationType`.
    static let oneTimeProductTypes: [Int64: (name: String, type: EventType)] = [
        1: ("ONE_TIME_PRODUCT_PURCHASED", .purchaseCompleted),
        2: ("ONE_TIME_PRODUCT_CANCELED", .purchaseCanceled),
    ]

    /// The event type and `sourceType` (`NAME(code)`); unknown codes are `store.other` and keep their code.
    static func subscription(_ code: Int64) -> (sourceType: String, type: EventType) {
        guard let known = subscriptionTypes[code] else { return ("SUBSCRIPTION_UNKNOWN(\(code))", .storeOther) }
        return ("\(known.name)(\(code))", known.type)
    }

    static func oneTimeProduct(_ code: Int64) -> (sourceType: String, type: EventType) {
        guard let known = oneTimeProductTypes[code] else { return ("ONE_TIME_PRODUCT_UNKNOWN(\(code))", .storeOther) }
        return ("\(known.name)(\(code))", known.type)
    }

    /// `VoidedPurchaseNotification.refundType`, lower-case for the event's `reason`.
    public static func refundReason(_ refundType: Int64?) -> String? {
        switch refundType {
        case 1: "full_refund"
        case 2: "quantity_based_partial_refund"
        default: nil
        }
    }
}
