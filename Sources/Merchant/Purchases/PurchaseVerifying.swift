import Entitlements
import Events
import Rejections
import Toolkit
import Verifiers

/// What an app reports it bought, as `POST /v1/purchases` (and `/v1/validate`) carry it.
public enum PurchaseClaim: Sendable, Equatable {
    /// StoreKit 2's JWS transaction, verified offline with the notifications' chain verifier.
    case appleSignedTransaction(String)
    /// A transaction id, looked up through the App Store Server API with that app's key.
    case appleTransactionId(String, bundleId: String)
    /// A legacy base64 app receipt: verified as Apple's for the app, then its first transaction id is looked up.
    case appleReceipt(String, bundleId: String)
    /// A Play purchase token, checked with the Play Developer API.
    case google(packageName: String, productId: String, purchaseToken: String)

    /// Whether the claim itself shows the caller holds the purchase (a signed transaction, a signed
    /// receipt, a purchase token the Play API confirms), so a client credential may report it; a bare
    /// transaction id can be learnt elsewhere and is a server credential's to report.
    public var provesPossession: Bool {
        if case .appleTransactionId = self { return false }
        return true
    }

    /// Whether verifying it calls the store's API (a signed transaction is checked offline).
    public var callsStore: Bool {
        if case .appleSignedTransaction = self { return false }
        return true
    }
}

/// One purchase as its store confirmed it: what the event published for it says.
public struct VerifiedPurchase: Sendable, Equatable {
    public var source: SourceName
    /// Bundle id (Apple) or package name (Google).
    public var app: String
    public var environment: NormalizedEvent.Environment
    /// The purchase key's subject, as the store's notifications name it: Apple's original transaction
    /// id, Google's purchase token. A later notification for it finds the same purchase.
    public var subject: String
    public var product: String
    public var kind: Kind
    /// The event type that states the purchase as the store reports it now: `subscription.started`,
    /// `purchase.completed`, `subscription.expired`, `purchase.refunded`, `subscription.revoked`...
    public var type: EventType
    /// When the store stated it (Apple's signedDate, the Play API's answer time).
    public var occurredAt: Timestamp
    public var transaction: NormalizedEvent.Transaction?
    public var price: NormalizedEvent.Price?
    public var subscription: NormalizedEvent.Subscription?
    /// Google: the acknowledgement still owed for this purchase; nil when none is (Apple, or acknowledged).
    public var acknowledgement: PlayAcknowledgement?
    /// The user the store itself names for the purchase (Apple's `appAccountToken`, Google's
    /// `obfuscatedExternalAccountId`): every notification gives the purchase to that user, so no
    /// other user can hold it.
    public var owner: String?
    /// What the store says of the offer the current period was bought with (answered by `/v1/validate`).
    public var offer: Offer?

    public struct Offer: Sendable, Equatable {
        public var introductory: Bool
        public var trial: Bool
        /// The promotional offer's id, if one was redeemed.
        public var id: String?
        public init(introductory: Bool, trial: Bool, id: String?) { self.introductory = introductory; self.trial = trial; self.id = id }
    }
    /// A price increase: true once the customer agreed, false while notified only; nil without one.
    public var priceIncreaseAgreed: Bool?
    /// What the store's own record says beyond the event's fields, for answers in the store's shape
    /// (`/v1/validate`'s native transaction). Never a purchase token or an account id.
    public var record: StoreRecord?

    public enum StoreRecord: Sendable, Equatable {
        /// Apple's transaction: when the original purchase was made.
        case apple(originalPurchaseDate: Timestamp?)
        /// A Play one-time product, its states as the Play Developer API numbers them.
        case playProduct(purchaseState: Int?, consumptionState: Int?, acknowledgementState: Int?, regionCode: String?)
        /// A Play subscription (`subscriptionsv2`): its state and acknowledgement as the API names them, its line items.
        case playSubscription(state: String?, acknowledgementState: String?, regionCode: String?, lineItems: [PlayLineItem])
    }

    public struct PlayLineItem: Sendable, Equatable {
        public var productId: String?
        public var expiryTime: Timestamp?
        public init(productId: String?, expiryTime: Timestamp?) { self.productId = productId; self.expiryTime = expiryTime }
    }

    public enum Kind: String, Sendable, Equatable { case subscription, oneTime = "one_time" }

    public init(source: SourceName, app: String, environment: NormalizedEvent.Environment, subject: String, product: String,
                kind: Kind, type: EventType, occurredAt: Timestamp, transaction: NormalizedEvent.Transaction? = nil,
                price: NormalizedEvent.Price? = nil, subscription: NormalizedEvent.Subscription? = nil,
                acknowledgement: PlayAcknowledgement? = nil, owner: String? = nil) {
        self.source = source; self.app = app; self.environment = environment; self.subject = subject
        self.product = product; self.kind = kind; self.type = type; self.occurredAt = occurredAt
        self.transaction = transaction; self.price = price; self.subscription = subscription
        self.acknowledgement = acknowledgement
        self.owner = owner
    }
}

/// A Play purchase that must be acknowledged within three days of its purchase, or Google refunds it.
public struct PlayAcknowledgement: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable { case subscription, product }
    public var kind: Kind
    public var packageName: String
    /// The subscription id (`purchases.subscriptions.acknowledge`) or product id (`purchases.products.acknowledge`).
    public var productId: String
    public var purchaseToken: String
    /// Purchase time plus three days: past it, acknowledging no longer helps.
    public var deadlineMs: Int64

    public init(kind: Kind, packageName: String, productId: String, purchaseToken: String, deadlineMs: Int64) {
        self.kind = kind; self.packageName = packageName; self.productId = productId
        self.purchaseToken = purchaseToken; self.deadlineMs = deadlineMs
    }
}

/// One store's verification of what apps claim. A claim of another store is not asked of it.
public protocol PurchaseVerifying: Sendable {
    /// The purchases the claim proves (a receipt may hold several), or why none.
    func verify(_ claim: PurchaseClaim) async throws(Rejection) -> [VerifiedPurchase]
}

/// Acknowledges Play purchases once their event is durable: now, or, when Google cannot be reached,
/// later by the workers' retry loop until the deadline passes.
public protocol PlayAcknowledging: Sendable {
    func acknowledge(_ acknowledgement: PlayAcknowledgement) async
}

extension PurchaseIds {
    /// A verified purchase's opaque id: what every answer names it by.
    func id(of purchase: VerifiedPurchase) -> String {
        id(source: purchase.source.rawValue, app: purchase.app, environment: purchase.environment.rawValue, subject: purchase.subject)
    }
}
