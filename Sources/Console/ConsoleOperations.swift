import Entitlements

/// What the console's operational pages and actions reach beyond the store's reads: the dead-letter
/// topic, the stores' APIs, the outbound endpoints and the audit topic. The workers, which hold the
/// producer, the refresher and the endpoints, fill it (`WorkerConsoleOperations`); the console stays
/// free of Kafka and of the merchant features.
public protocol ConsoleOperations: Sendable {
    /// The dead-letter topic, oldest first, each with how often it was replayed.
    func deadLetters() async throws -> [ConsoleDeadLetter]
    /// Re-publishes one dead letter (`partition:offset`) to the topic it failed on, once; a dry run says where.
    func replayDeadLetter(at position: String, dryRun: Bool) async throws -> ActionOutcome
    /// Reads one purchase back from its store's API and applies what changed.
    func refreshPurchase(_ purchaseId: String) async throws -> ActionOutcome
    /// The outbound endpoints, with their state and backlog.
    func endpoints() async throws -> [ConsoleEndpoint]
    func setEndpoint(_ name: String, enabled: Bool) async throws -> ActionOutcome
    /// Delivers an endpoint's chosen kept messages again (a purchase's, its parked ones, or those recorded
    /// since a time); a dry run counts them.
    func replayToEndpoint(_ name: String, _ scope: EndpointReplayScope, dryRun: Bool) async throws -> ActionOutcome
    /// Each outbound endpoint's delivery of the messages these events made.
    func deliveries(ofEvents eventIds: [String]) async throws -> [ConsoleDelivery]
    /// Publishes an audit record to `tollgate.audit`.
    func publishAudit(_ entry: AuditEntry) async throws
    /// The raw record a sender's delivery was written to (`raw.<source>`, by position); nil when the topic no longer keeps it.
    func rawRecord(source: String, partition: Int32, offset: Int64) async throws -> ConsoleRawRecord?
    /// Verifies that delivery again with its sender's code, offline, as `tollgate replay` does, and publishes its
    /// events to the events topic again (same ids: the projection applies each once); a dry run says what it would publish.
    func reverify(source: String, partition: Int32, offset: Int64, dryRun: Bool) async throws -> ActionOutcome
}

/// A raw record as the gateway wrote it: the kept request headers (never a credential) and the body.
public struct ConsoleRawRecord: Sendable {
    public var timestampMs: Int64?
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(timestampMs: Int64?, headers: [(name: String, value: String)], body: [UInt8]) {
        self.timestampMs = timestampMs
        self.headers = headers
        self.body = body
    }
}

/// Which of an endpoint's kept messages an operator sends again.
public enum EndpointReplayScope: Sendable, Equatable {
    /// Those about one purchase (`pur_...`).
    case purchase(String)
    /// Those it parked.
    case parked
    /// Those recorded in the last hours.
    case lastHours(Int)

    /// How the audit and the pages name it.
    public var description: String {
        switch self {
        case .purchase(let id): "purchase \(id)'s messages"
        case .parked: "the parked messages"
        case .lastHours(let hours): "the messages of the last \(hours == 1 ? "hour" : "\(hours) hours")"
        }
    }
}

public struct ConsoleDeadLetter: Sendable {
    public var position: String
    public var time: String
    public var eventId: String
    public var type: String
    public var subject: String
    public var error: String
    public var replays: Int
    public var headers: [(name: String, value: String)]
    public var body: String

    public init(position: String, time: String, eventId: String, type: String, subject: String, error: String, replays: Int,
                headers: [(name: String, value: String)], body: String) {
        self.position = position
        self.time = time
        self.eventId = eventId
        self.type = type
        self.subject = subject
        self.error = error
        self.replays = replays
        self.headers = headers
        self.body = body
    }
}

public struct ConsoleEndpoint: Sendable {
    public var name: String
    public var kind: String
    public var origin: String
    /// `enabled`, `disabled (configuration)`, `disabled (operator)`, `disabled (failing)`, `failing since ...`.
    public var state: String
    public var enabled: Bool
    public var pending: Int
    public var parked: Int

    public init(name: String, kind: String, origin: String, state: String, enabled: Bool, pending: Int, parked: Int) {
        self.name = name
        self.kind = kind
        self.origin = origin
        self.state = state
        self.enabled = enabled
        self.pending = pending
        self.parked = parked
    }
}

/// What an action did: `done`, `dry_run` (a preview), `refused` (it would not: replayed before, nothing to send...)
/// or `failed`, and a sentence for the operator and the audit.
public struct ActionOutcome: Sendable, Equatable {
    public var outcome: String
    public var detail: String

    public init(_ outcome: String, _ detail: String) {
        self.outcome = outcome
        self.detail = detail
    }
}

/// One endpoint's delivery of a message an event made (the purchase story's outbound deliveries).
public struct ConsoleDelivery: Sendable {
    public var eventId: String
    public var messageId: String
    public var endpoint: String
    public var user: String
    public var product: String
    public var status: String
    public var attempts: Int
    public var updatedAtMs: Int64

    public init(eventId: String, messageId: String, endpoint: String, user: String, product: String, status: String, attempts: Int,
                updatedAtMs: Int64) {
        self.eventId = eventId
        self.messageId = messageId
        self.endpoint = endpoint
        self.user = user
        self.product = product
        self.status = status
        self.attempts = attempts
        self.updatedAtMs = updatedAtMs
    }
}
