import Store

/// Why the workers could not apply an event, and whether it may pass later.
public struct WorkerFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Written as `kafka_dlt-exception-fqcn`, Spring's exception class name (docs/asyncapi.yaml lists them).
    public enum Kind: String, Sendable, CaseIterable {
        case undecodableEvent = "tollgate.UndecodableEvent"
        case unsupportedSchemaVersion = "tollgate.UnsupportedSchemaVersion"
        case playAPIError = "tollgate.PlayAPIError"
        case internalError = "tollgate.InternalError"
        case storeUnavailable = "tollgate.StoreUnavailable"
        case storeRejected = "tollgate.StoreRejected"
        case consumptionAnswerFailed = "tollgate.ConsumptionAnswerFailed"
    }

    public var kind: Kind
    /// The kind's Spring-style name, e.g. `tollgate.StoreUnavailable`.
    public var type: String { kind.rawValue }
    public var message: String
    /// A failure that may pass later goes through the retry tiers; any other goes to the DLT at once.
    public var isTransient: Bool

    public init(_ kind: Kind, message: String, isTransient: Bool) {
        self.kind = kind
        self.message = message
        self.isTransient = isTransient
    }

    public var description: String { "\(type): \(message)" }

    /// A store error while applying: transient ones (the connection, a busy lock) go through the retry tiers.
    public static func store(_ error: StoreError) -> WorkerFailure {
        WorkerFailure(error.isTransient ? .storeUnavailable : .storeRejected, message: error.message, isTransient: error.isTransient)
    }

    public static func undecodable(_ message: String) -> WorkerFailure {
        WorkerFailure(.undecodableEvent, message: message, isTransient: false)
    }

    public static func unsupportedVersion(_ message: String) -> WorkerFailure {
        WorkerFailure(.unsupportedSchemaVersion, message: message, isTransient: false)
    }
}
