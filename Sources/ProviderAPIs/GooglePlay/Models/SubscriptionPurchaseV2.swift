import Events

/// A subscription purchase as `purchases.subscriptionsv2.get` answers it
/// (https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.subscriptionsv2).
/// Property names are Google's field names. Everything is optional: Google leaves out, or sends
/// null for, what does not apply. Fields not modelled here are ignored.
public struct SubscriptionPurchaseV2: Decodable, Sendable, Equatable {
    /// `androidpublisher#subscriptionPurchaseV2`.
    public let kind: String?
    /// ISO 3166-1 alpha-2 billing country of the user when the subscription was granted.
    public let regionCode: String?
    /// One per base plan or offer; all auto-renewing or all prepaid.
    public let lineItems: [LineItem]?
    /// When the subscription was granted; not set while pending.
    public let startTime: Timestamp?
    public let subscriptionState: SubscriptionState?
    /// The purchase this one replaces (re-signup, upgrade, downgrade, plan conversion, top-up).
    public let linkedPurchaseToken: String?
    public let pausedStateContext: PausedStateContext?
    public let canceledStateContext: CanceledStateContext?
    /// Set only in grace period: the renewal order that was declined.
    public let inGracePeriodStateContext: RenewalDeclinedContext?
    /// Set only on hold: the renewal order that was declined.
    public let onHoldStateContext: RenewalDeclinedContext?
    /// Set for a re-subscription made in the Play subscriptions center, until it is acknowledged: the
    /// expired subscription it follows (whose user it is).
    public let outOfAppPurchaseContext: OutOfAppPurchaseContext?
    /// Present (an empty object) only for a license tester's purchase.
    public let testPurchase: TestPurchase?
    /// `ACKNOWLEDGEMENT_STATE_PENDING` or `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    public let acknowledgementState: String?
    public let externalAccountIdentifiers: ExternalAccountIdentifiers?

    /// The latest expiry over the line items: when access ends unless renewed.
    public var latestExpiryTime: Timestamp? { lineItems?.compactMap(\.expiryTime).max() }

    /// The purchase whose user this one is: the one it replaces, or, bought outside the app, the expired one it follows.
    public var predecessorToken: String? { linkedPurchaseToken ?? outOfAppPurchaseContext?.expiredPurchaseToken }

    public struct RenewalDeclinedContext: Decodable, Sendable, Equatable {
        public struct RenewalDeclined: Decodable, Sendable, Equatable {
            /// The pending or failed order that caused the state.
            public let pendingOrderId: String?
        }
        public let renewalDeclined: RenewalDeclined?
    }

    public struct OutOfAppPurchaseContext: Decodable, Sendable, Equatable {
        public let expiredExternalAccountIdentifiers: ExternalAccountIdentifiers?
        /// Usable with the API for 60 days after its expiry.
        public let expiredPurchaseToken: String?
    }

    private enum CodingKeys: String, CodingKey {
        case kind, regionCode, lineItems, startTime, subscriptionState, linkedPurchaseToken
        case pausedStateContext, canceledStateContext, testPurchase, acknowledgementState, externalAccountIdentifiers
        case inGracePeriodStateContext, onHoldStateContext, outOfAppPurchaseContext
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decodeIfPresent(String.self, forKey: .kind)
        regionCode = try c.decodeIfPresent(String.self, forKey: .regionCode)
        lineItems = try c.decodeIfPresent([LineItem].self, forKey: .lineItems)
        startTime = try c.decodeTimestampIfPresent(forKey: .startTime)
        subscriptionState = try c.decodeIfPresent(SubscriptionState.self, forKey: .subscriptionState)
        linkedPurchaseToken = try c.decodeIfPresent(String.self, forKey: .linkedPurchaseToken)
        pausedStateContext = try c.decodeIfPresent(PausedStateContext.self, forKey: .pausedStateContext)
        canceledStateContext = try c.decodeIfPresent(CanceledStateContext.self, forKey: .canceledStateContext)
        testPurchase = try c.decodeIfPresent(TestPurchase.self, forKey: .testPurchase)
        acknowledgementState = try c.decodeIfPresent(String.self, forKey: .acknowledgementState)
        externalAccountIdentifiers = try c.decodeIfPresent(ExternalAccountIdentifiers.self, forKey: .externalAccountIdentifiers)
        inGracePeriodStateContext = try c.decodeIfPresent(RenewalDeclinedContext.self, forKey: .inGracePeriodStateContext)
        onHoldStateContext = try c.decodeIfPresent(RenewalDeclinedContext.self, forKey: .onHoldStateContext)
        outOfAppPurchaseContext = try c.decodeIfPresent(OutOfAppPurchaseContext.self, forKey: .outOfAppPurchaseContext)
    }
}
