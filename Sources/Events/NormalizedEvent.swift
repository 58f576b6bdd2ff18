/// The common event every sender is normalized into; its JSON is the value on `tollgate.events`.
/// Optional fields are absent from the JSON rather than null.
public struct NormalizedEvent: Sendable, Codable, Equatable {
    public enum Environment: String, Sendable, Codable { case production, sandbox }

    public struct Transaction: Sendable, Codable, Equatable {
        /// How a refunded or revoked transaction was (`revocationType`): the whole of it, a share of it
        /// (`revocationPercentage`), or taken from a family member.
        public enum Revocation: String, Sendable, Codable {
            case refundFull = "refund_full", refundProrated = "refund_prorated", familyRevoke = "family_revoke"
        }

        public var id: String?
        public var originalId: String?
        public var purchasedAt: String?
        public var expiresAt: String?
        public var revokedAt: String?
        public var quantity: Int?
        public var revocationType: Revocation?
        /// The share refunded or revoked, in thousandths of a percent (Apple's milliunits: 40000 is 40%),
        /// of the whole quantity.
        public var revocationPercentage: Int?
        /// The offer the transaction was bought with: `introductory`, `promotional`, `offer_code`, `win_back`,
        /// and how it discounts (`free_trial`, `pay_as_you_go`, `pay_up_front`, `one_time`).
        public var offerType: String?
        public var offerDiscountType: String?
        /// Apple's id of the customer's download of the app (`appTransactionId`): the same for all their purchases in it.
        public var appTransactionId: String?
        /// How the subscription bills: `billed_upfront`, or `monthly` within a commitment.
        public var billingPlan: String?
        /// A commitment to a number of billing periods (Apple's monthly plan with a 12-month commitment).
        public var commitment: Commitment?
        /// Units of `quantity` refunded by quantity-based partial refunds (Google's `refundableQuantity` is what remains).
        public var refundedQuantity: Int?
        /// The offer the purchase was bought through (Google's `offerId`), and the purchase option (Google's `purchaseOptionId`).
        public var offerId: String?
        public var purchaseOption: String?
        /// A rental (Google's rent purchase option): access ends at `expiresAt`, the purchase option's rental period after the purchase.
        public var rental: Bool?

        public struct Commitment: Sendable, Codable, Equatable {
            /// The period this transaction pays, of `periods`.
            public var period: Int?
            public var periods: Int?
            public var expiresAt: String?
            public init(period: Int? = nil, periods: Int? = nil, expiresAt: String? = nil) {
                self.period = period; self.periods = periods; self.expiresAt = expiresAt
            }
        }
        public init(id: String? = nil, originalId: String? = nil, purchasedAt: String? = nil,
                    expiresAt: String? = nil, revokedAt: String? = nil, quantity: Int? = nil,
                    revocationType: Revocation? = nil, revocationPercentage: Int? = nil,
                    offerType: String? = nil, offerDiscountType: String? = nil, appTransactionId: String? = nil,
                    billingPlan: String? = nil, commitment: Commitment? = nil, refundedQuantity: Int? = nil,
                    offerId: String? = nil, purchaseOption: String? = nil, rental: Bool? = nil) {
            self.id = id; self.originalId = originalId; self.purchasedAt = purchasedAt
            self.expiresAt = expiresAt; self.revokedAt = revokedAt; self.quantity = quantity
            self.revocationType = revocationType; self.revocationPercentage = revocationPercentage
            self.offerType = offerType; self.offerDiscountType = offerDiscountType; self.appTransactionId = appTransactionId
            self.billingPlan = billingPlan; self.commitment = commitment
            self.refundedQuantity = refundedQuantity; self.offerId = offerId; self.purchaseOption = purchaseOption; self.rental = rental
        }
        var isEmpty: Bool { self == Transaction() }
    }

    public struct Price: Sendable, Codable, Equatable {
        public var amountMicros: Int64
        public var currency: String
        public init(amountMicros: Int64, currency: String) {
            self.amountMicros = amountMicros; self.currency = currency
        }
    }

    public struct Subscription: Sendable, Codable, Equatable {
        public var autoRenew: Bool?
        public var gracePeriodExpiresAt: String?
        public var billingRetry: Bool?
        public var state: String?
        /// The phase of the offer the current period is in (Google): `base`, `free_trial`, `introductory`, `proration`.
        public var offerPhase: String?
        /// A price increase awaiting the customer's consent (Google's price step-up): `pending`, `confirmed`, `completed`.
        public var priceConsent: String?
        /// The product this subscription replaced (Google's `itemReplacement`: an upgrade, a downgrade, a plan change).
        public var replacedProduct: String?
        public init(autoRenew: Bool? = nil, gracePeriodExpiresAt: String? = nil, billingRetry: Bool? = nil, state: String? = nil,
                    offerPhase: String? = nil, priceConsent: String? = nil, replacedProduct: String? = nil) {
            self.autoRenew = autoRenew; self.gracePeriodExpiresAt = gracePeriodExpiresAt
            self.billingRetry = billingRetry; self.state = state
            self.offerPhase = offerPhase; self.priceConsent = priceConsent; self.replacedProduct = replacedProduct
        }
        var isEmpty: Bool { self == Subscription() }
    }

    public var id: String
    public var type: EventType
    /// The CloudEvents source, e.g. `/iaptic/<app>`.
    public var source: String
    public var environment: Environment
    public var app: String
    /// The Kafka key: the purchase this event belongs to.
    public var subject: String
    public var occurredAt: String
    public var receivedAt: String
    public var user: String?
    public var product: String?
    public var transaction: Transaction?
    public var price: Price?
    public var subscription: Subscription?
    public var reason: String?
    public var sourceType: String
    /// A refund review the store asks the merchant to answer (`purchase.refund_review_requested`).
    public var refundReview: RefundReview?

    public struct RefundReview: Sendable, Codable, Equatable {
        /// Google's `pendingRefundToken`: the review's answer names it (`orders.reviewrefund`). A credential for
        /// this one review, usable only with the merchant's Play Developer API key.
        public var pendingRefundToken: String
        /// When the store stops taking an answer (Google: 24 hours after the notification arrived).
        public var respondBy: String
        public init(pendingRefundToken: String, respondBy: String) { self.pendingRefundToken = pendingRefundToken; self.respondBy = respondBy }
    }

    public init(id: String, type: EventType, source: String, environment: Environment, app: String,
                subject: String, occurredAt: String, receivedAt: String, user: String? = nil,
                product: String? = nil, transaction: Transaction? = nil, price: Price? = nil,
                subscription: Subscription? = nil, reason: String? = nil, sourceType: String) {
        self.id = id; self.type = type; self.source = source; self.environment = environment
        self.app = app; self.subject = subject; self.occurredAt = occurredAt; self.receivedAt = receivedAt
        self.user = user; self.product = product
        self.transaction = transaction.flatMap { $0.isEmpty ? nil : $0 }
        self.price = price
        self.subscription = subscription.flatMap { $0.isEmpty ? nil : $0 }
        self.reason = reason; self.sourceType = sourceType
    }
}

extension NormalizedEvent {
    /// `sourceType` of the events `POST /v1/purchases` publishes: a purchase its store confirmed, reported
    /// by the app with its user. Its user holds even where the store has said more since (docs/purchases.md).
    public static let reportedPurchaseSourceType = "PURCHASE_REPORTED"

    public var isReportedPurchase: Bool { sourceType == Self.reportedPurchaseSourceType }
}
