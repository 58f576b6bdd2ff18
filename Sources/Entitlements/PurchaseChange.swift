import Events
import Store

/// One event's effect on one purchase, applied by `EntitlementStore.apply` in a transaction.
public struct PurchaseChange: Sendable {
    /// The event's `ce_id`: applied once, whatever the redeliveries and replays.
    public var eventId: String
    public var key: PurchaseKey
    /// The new state given the stored one (nil when there is none yet), or nil to leave it as it is
    /// (an event older than the stored state, or one that changes nothing).
    public var update: @Sendable (Purchase?) -> Purchase?
    /// The subject of a purchase this one replaces (same source and app): it is marked superseded,
    /// and its user carried over when this purchase names none.
    public var supersedes: String?
    /// What merchant features write with this event, in its transaction, before `update` (`ProjectionStep`).
    public var steps: [any ProjectionStep] = []
    /// The event itself, for what records the events applied (`AppliedEventRecorder`: outbound webhooks).
    public var event: NormalizedEvent?
    /// Set when the purchase's history is kept (the console): the event (`event`) is recorded with it.
    public var history: HistoryNote?
    /// False for an event that changes no purchase, only runs its steps (`stepsOnly`): its purchase is not read.
    public private(set) var changesPurchase = true

    public init(eventId: String, key: PurchaseKey, supersedes: String? = nil,
                update: @escaping @Sendable (Purchase?) -> Purchase?) {
        self.eventId = eventId
        self.key = key
        self.supersedes = supersedes
        self.update = update
    }

    /// An event that changes no purchase but whose steps must run once, in a batch's transaction (a
    /// refund result that names a checkout, not a purchase). `key` is the purchase the event names.
    public static func stepsOnly(eventId: String, key: PurchaseKey, steps: [any ProjectionStep]) -> PurchaseChange {
        var change = PurchaseChange(eventId: eventId, key: key) { _ in nil }
        change.steps = steps
        change.changesPurchase = false
        return change
    }
}

/// What `apply` did with one change.
public enum ApplyOutcome: Sendable, Equatable {
    case applied
    /// Recorded as processed, state untouched (older than the stored state, or no effect).
    case unchanged
    /// This event id was applied before.
    case duplicate
}
