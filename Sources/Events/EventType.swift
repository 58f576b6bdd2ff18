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
    /// Google's `pendingRefundReviewNotification`: a chargeback Google asks the merchant's view on within
    /// 24 hours (`orders.reviewrefund`). It names an order, not a purchase token.
    case purchaseRefundReviewRequested = "purchase.refund_review_requested"
    /// Apple's external purchase tokens (`EXTERNAL_PURCHASE_TOKEN`): one created, one still active that
    /// needs its report, one never reported. About the app's reporting to Apple, not a purchase here.
    case externalPurchaseTokenCreated = "external_purchase.token_created"
    case externalPurchaseTokenActive = "external_purchase.token_active"
    case externalPurchaseTokenUnreported = "external_purchase.token_unreported"
    /// Apple's `RESCIND_CONSENT`: a parent or guardian withdrew consent for the app (its `appData`).
    case consentRescinded = "consent.rescinded"
    case storeTest = "store.test"
    case storeOther = "store.other"

    /// Whether an event of this type may change a purchase: the app's own news (tests, tokens to report,
    /// consent) never does. (`store.other` may, where a store's API says how the purchase stands.)
    public var concernsPurchases: Bool {
        switch self {
        case .storeTest, .externalPurchaseTokenCreated, .externalPurchaseTokenActive, .externalPurchaseTokenUnreported, .consentRescinded,
             .purchaseRefundReviewRequested: false
        default: true
        }
    }

    /// The CloudEvents `ce_type` attribute.
    public var cloudEventType: String { "dev.tollgate." + rawValue }

    public init?(cloudEventType: String) {
        let prefix = "dev.tollgate."
        guard cloudEventType.hasPrefix(prefix) else { return nil }
        self.init(rawValue: String(cloudEventType.dropFirst(prefix.count)))
    }
}
