import Events

/// Iaptic's `notification.reason` values and their place in the vocabulary (Sources/Events/EventType.swift).
enum IapticReason {
    /// Reasons that only say "here is the current state": the purchase gets a snapshot event.
    static let snapshotReasons: Set<String> = ["RECEIPT_VALIDATED", "RECEIPT_REFRESHED", "WEBHOOK_REPEATED"]

    static func eventType(reason: String?, isSubscription: Bool) -> EventType {
        guard let reason = reason?.uppercased(), !snapshotReasons.contains(reason) else { return .subscriptionUpdated }
        switch reason {
        case "PURCHASED": return isSubscription ? .subscriptionStarted : .purchaseCompleted
        case "RENEWED": return .subscriptionRenewed
        case "ENTERED_GRACE_PERIOD": return .subscriptionBillingIssue
        case "WILL_LAPSE": return .subscriptionAutoRenewDisabled
        case "WILL_AUTO_RENEW": return .subscriptionAutoRenewEnabled
        case "EXPIRED": return .subscriptionExpired
        case "PAUSED": return .subscriptionPaused
        case "REVOKED": return .subscriptionRevoked
        case "EXTENDED": return .subscriptionExtended
        case "PRICE_CHANGE_CONFIRMED": return .subscriptionPriceChange
        case "REFUNDED": return .purchaseRefunded
        default: return .storeOther
        }
    }
}
