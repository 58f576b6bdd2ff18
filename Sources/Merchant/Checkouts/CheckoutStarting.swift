import Events
import Rejections
import Verifiers

/// A user's intent to pay for a product through a payment provider (`POST /v1/checkouts`, Sileo's purchase).
public struct CheckoutIntent: Sendable, Equatable {
    public var app: String
    public var user: String
    public var product: String
    /// In the currency's minor units (cents), as Antom's `amount.value` and Citcon's amounts are.
    public var amountMinor: Int64
    /// ISO 4217, upper case.
    public var currency: String
    /// `alipayplus` or `citcon` (`SourceName`).
    public var provider: SourceName
    public var environment: NormalizedEvent.Environment

    public init(app: String, user: String, product: String, amountMinor: Int64, currency: String, provider: SourceName,
                environment: NormalizedEvent.Environment = .production) {
        self.app = app; self.user = user; self.product = product; self.amountMinor = amountMinor
        self.currency = currency; self.provider = provider; self.environment = environment
    }
}

/// A recorded checkout, as its starter answers it.
public struct StartedCheckout: Sendable, Equatable {
    public var id: String
    /// The reference the provider's notification carries back (Antom's `paymentRequestId`, Citcon's
    /// `order.transaction.reference`).
    public var reference: String
    /// Where the payer pays (Antom's cashier page); nil when the app's SDK makes the order itself (Citcon).
    public var paymentURL: String?
    /// The notification URL the app must put in its order (Citcon's `order.urls.ipn`); nil when Tollgate sent it itself.
    public var notifyURL: String?
    public var expiresAtMs: Int64

    public init(id: String, reference: String, paymentURL: String?, notifyURL: String?, expiresAtMs: Int64) {
        self.id = id; self.reference = reference; self.paymentURL = paymentURL; self.notifyURL = notifyURL
        self.expiresAtMs = expiresAtMs
    }
}

/// Records a checkout and starts its payment with the provider; nothing is left half-made on failure.
public protocol CheckoutStarting: Sendable {
    func start(_ intent: CheckoutIntent) async throws(Rejection) -> StartedCheckout
}
