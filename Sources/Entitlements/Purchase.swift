import Store

/// Which purchase a row is: one per sender, app, environment and subject (the Kafka key of its events).
/// The environment is part of it so a sandbox event can never change a production purchase, even one
/// with the same subject.
public struct PurchaseKey: Sendable, Hashable, CustomStringConvertible {
    public var source: String
    public var app: String
    /// `production` or `sandbox` (`NormalizedEvent.Environment`).
    public var environment: String
    public var subject: String

    public init(source: String, app: String, environment: String, subject: String) {
        self.source = source
        self.app = app
        self.environment = environment
        self.subject = subject
    }

    public var description: String { "\(source)/\(app)/\(environment)/\(subject)" }
}

/// The lifecycle state of a purchase, in one vocabulary for every sender.
public enum PurchaseState: String, Sendable, CaseIterable {
    case active, gracePeriod = "grace_period", billingRetry = "billing_retry", onHold = "on_hold", paused
    case pending, expired, revoked, refunded, canceled, failed
    /// Replaced by another purchase (Google `linkedPurchaseToken`: an upgrade, downgrade or resubscribe).
    case superseded
}

/// What the store keeps about one purchase: the projection of every event applied to it.
public struct Purchase: Sendable, Equatable {
    public enum Kind: String, Sendable { case subscription, oneTime = "one_time" }

    public var key: PurchaseKey
    public var kind: Kind
    public var state: PurchaseState
    public var user: String?
    public var product: String?
    /// The key's environment.
    public var environment: String { key.environment }
    public var expiresAtMs: Int64?
    public var gracePeriodExpiresAtMs: Int64?
    public var autoRenew: Bool?
    /// Units held (a purchase's quantity, less what a prorated refund took back); nil when the store does not say.
    public var quantity: Int?
    /// Apple's `appTransactionId`: the customer's download of the app, one for all their purchases in it.
    public var appTransactionId: String?
    /// The purchase that replaced this one, when superseded.
    public var supersededBy: String?
    /// `occurredAt` of the newest event applied: an older event must not roll the state back.
    public var lastEventAtMs: Int64
    public var lastEventId: String
    public var lastEventType: String

    public init(key: PurchaseKey, kind: Kind, state: PurchaseState, user: String? = nil, product: String? = nil,
                expiresAtMs: Int64? = nil, gracePeriodExpiresAtMs: Int64? = nil,
                autoRenew: Bool? = nil, quantity: Int? = nil, supersededBy: String? = nil, lastEventAtMs: Int64, lastEventId: String,
                lastEventType: String) {
        self.key = key
        self.kind = kind
        self.state = state
        self.user = user
        self.product = product
        self.expiresAtMs = expiresAtMs
        self.gracePeriodExpiresAtMs = gracePeriodExpiresAtMs
        self.autoRenew = autoRenew
        self.quantity = quantity
        self.supersededBy = supersededBy
        self.lastEventAtMs = lastEventAtMs
        self.lastEventId = lastEventId
        self.lastEventType = lastEventType
    }

    /// Whether the purchase entitles its user at `nowMs`: an active subscription until it expires, one in
    /// its grace period until the grace ends, a one-time purchase until it is refunded, revoked or canceled.
    public func entitles(atMs nowMs: Int64) -> Bool {
        state.entitles(expiresAtMs: expiresAtMs, gracePeriodExpiresAtMs: gracePeriodExpiresAtMs, atMs: nowMs)
    }
}

extension PurchaseState {
    func entitles(expiresAtMs: Int64?, gracePeriodExpiresAtMs: Int64?, atMs nowMs: Int64) -> Bool {
        switch self {
        case .active: return expiresAtMs.map { $0 > nowMs } ?? true
        case .gracePeriod: return (gracePeriodExpiresAtMs ?? expiresAtMs).map { $0 > nowMs } ?? true
        default: return false
        }
    }
}
