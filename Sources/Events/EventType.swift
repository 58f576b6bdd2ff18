/// The one vocabulary of normalized event types (docs/topics.md, docs/schemas/event.schema.json).
/// Nothing is ever dropped: a sender type without a mapping becomes `.storeOther`.
public enum EventType: String, CaseIterable, Sendable, Codable {
    case subscriptionStarted = "subscription.started"
    case subscriptionResubscribed = "subscription.resubscribed"
    case subscriptionRenewed = "subscription.renewed"
    case subscriptionRecovered = "subscription.recovered"
    case subscriptionBillingIssue = "subscription.billing_issue"
    case subscriptionOnHold = "subscription.on_hold"
    case subscriptionAutoRenewDisabled = "subscription.auto_renew_disabled"
    case subscriptionAutoRenewEnabled = "subscription.auto_renew_enabled"
    case subscriptionPlanChanged = "subscription.plan_changed"
    case subscriptionExpired = "subscription.expired"
    case subscriptionPaused = "subscription.paused"
    case subscriptionPauseScheduled = "subscription.pause_scheduled"
    case subscriptionRevoked = "subscription.revoked"
    case subscriptionExtended = "subscription.extended"
    case subscriptionPriceChange = "subscription.price_change"
    case subscriptionOfferRedeemed = "subscription.offer_redeemed"
    case subscriptionPendingCanceled = "subscription.pending_canceled"
    case subscriptionUpdated = "subscription.updated"
    case purchaseCompleted = "purchase.completed"
    case purchaseAuthorized = "purchase.authorized"
    case purchasePending = "purchase.pending"
    case purchaseFailed = "purchase.failed"
    case purchaseCanceled = "purchase.canceled"
    case purchaseRefunded = "purchase.refunded"
    case purchaseRefundDeclined = "purchase.refund_declined"
    case purchaseRefundReversed = "purchase.refund_reversed"
    case purchaseChargeback = "purchase.chargeback"
    case purchaseConsumptionRequested = "purchase.consumption_requested"
    case storeTest = "store.test"
    case storeOther = "store.other"

    /// The CloudEvents `ce_type` attribute.
    public var cloudEventType: String { "dev.tollgate." + rawValue }

    public init?(cloudEventType: String) {
        let prefix = "dev.tollgate."
        guard cloudEventType.hasPrefix(prefix) else { return nil }
        self.init(rawValue: String(cloudEventType.dropFirst(prefix.count)))
    }
}
