import Events

/// Apple's notificationType/subtype to the vocabulary (Sources/Events/EventType.swift).
enum AppleEventType {
    static func of(_ type: AppleNotificationType?, _ subtype: AppleSubtype?) -> EventType {
        let sub = subtype?.rawValue
        switch type?.rawValue {
        case "SUBSCRIBED": return sub == "RESUBSCRIBE" ? .subscriptionResubscribed : .subscriptionStarted
        case "DID_RENEW": return sub == "BILLING_RECOVERY" ? .subscriptionRecovered : .subscriptionRenewed
        case "DID_FAIL_TO_RENEW": return .subscriptionBillingIssue
        case "DID_CHANGE_RENEWAL_STATUS":
            switch sub {
            case "AUTO_RENEW_DISABLED": return .subscriptionAutoRenewDisabled
            case "AUTO_RENEW_ENABLED": return .subscriptionAutoRenewEnabled
            default: return .storeOther
            }
        case "DID_CHANGE_RENEWAL_PREF": return .subscriptionPlanChanged
        case "EXPIRED", "GRACE_PERIOD_EXPIRED": return .subscriptionExpired
        case "REVOKE": return .subscriptionRevoked
        case "RENEWAL_EXTENDED", "RENEWAL_EXTENSION": return .subscriptionExtended
        case "PRICE_INCREASE": return .subscriptionPriceChange
        case "OFFER_REDEEMED": return .subscriptionOfferRedeemed
        case "ONE_TIME_CHARGE": return .purchaseCompleted
        case "REFUND": return .purchaseRefunded
        case "REFUND_DECLINED": return .purchaseRefundDeclined
        case "REFUND_REVERSED": return .purchaseRefundReversed
        case "CONSUMPTION_REQUEST": return .purchaseConsumptionRequested
        case "TEST": return .storeTest
        case "EXTERNAL_PURCHASE_TOKEN":
            switch sub {
            case "CREATED": return .externalPurchaseTokenCreated
            case "ACTIVE_TOKEN_REMINDER": return .externalPurchaseTokenActive
            case "UNREPORTED": return .externalPurchaseTokenUnreported
            default: return .storeOther
            }
        case "RESCIND_CONSENT": return .consentRescinded
        default: return .storeOther
        }
    }
}
