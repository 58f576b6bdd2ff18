import Store

/// One product a user is (or was) entitled to in an app and environment, from the purchase that decides it.
public struct Entitlement: Sendable, Equatable {
    public var app: String
    /// `production` or `sandbox`: a sandbox purchase decides only the sandbox entitlement.
    public var environment: String
    public var user: String
    public var product: String
    public var source: String
    public var subject: String
    public var state: PurchaseState
    public var expiresAtMs: Int64?
    public var gracePeriodExpiresAtMs: Int64?
    /// The deciding purchase's units (`Purchase.quantity`); nil when its store does not say.
    public var quantity: Int?

    public init(app: String, environment: String, user: String, product: String, source: String, subject: String, state: PurchaseState,
                expiresAtMs: Int64?, gracePeriodExpiresAtMs: Int64?, quantity: Int? = nil) {
        self.app = app
        self.environment = environment
        self.user = user
        self.product = product
        self.source = source
        self.subject = subject
        self.state = state
        self.expiresAtMs = expiresAtMs
        self.gracePeriodExpiresAtMs = gracePeriodExpiresAtMs
        self.quantity = quantity
    }

    init(deciding purchase: Purchase, user: String, product: String) {
        self.init(app: purchase.key.app, environment: purchase.key.environment, user: user, product: product, source: purchase.key.source,
                  subject: purchase.key.subject, state: purchase.state, expiresAtMs: purchase.expiresAtMs,
                  gracePeriodExpiresAtMs: purchase.gracePeriodExpiresAtMs, quantity: purchase.quantity)
    }

    /// The compacted topic's key, `<app>/<environment>/<user>/<product>` (docs/topics.md).
    public var topicKey: String { "\(app)/\(environment)/\(user)/\(product)" }

    var key: EntitlementKey { EntitlementKey(app: app, environment: environment, user: user, product: product) }

    public func isActive(atMs nowMs: Int64) -> Bool {
        state.entitles(expiresAtMs: expiresAtMs, gracePeriodExpiresAtMs: gracePeriodExpiresAtMs, atMs: nowMs)
    }
}

/// A change of one entitlement, waiting in the outbox for the relay to publish it.
public struct EntitlementChange: Sendable, Equatable {
    /// Increases with every change: the order of changes, per key and overall.
    public var sequence: Int64
    public var entitlement: Entitlement
    /// Whether it entitled the user when it changed.
    public var active: Bool
    public var changedAtMs: Int64
    /// The event (`ce_id`) that caused it.
    public var eventId: String
    /// When the change is a purchase moving between users: the user it came from (on the new holder's
    /// change) or went to (on the old holder's).
    public var transferredFrom: String? = nil
    public var transferredTo: String? = nil

    public init(sequence: Int64, entitlement: Entitlement, active: Bool, changedAtMs: Int64, eventId: String,
                transferredFrom: String? = nil, transferredTo: String? = nil) {
        self.sequence = sequence
        self.entitlement = entitlement
        self.active = active
        self.changedAtMs = changedAtMs
        self.eventId = eventId
        self.transferredFrom = transferredFrom
        self.transferredTo = transferredTo
    }
}
