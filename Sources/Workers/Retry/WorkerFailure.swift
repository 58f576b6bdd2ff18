/// Why the workers could not apply an event, and whether it may pass later.
public struct WorkerFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Written as `kafka_dlt-exception-fqcn`, Spring's exception class name, e.g. `tollgate.StoreUnavailable`.
    public var type: String
    public var message: String
    /// A failure that may pass later goes through the retry tiers; any other goes to the DLT at once.
    public var isTransient: Bool

    public init(type: String, message: String, isTransient: Bool) {
        self.type = type
        self.message = message
        self.isTransient = isTransient
    }

    public var description: String { "\(type): \(message)" }

    static func undecodable(_ message: String) -> WorkerFailure {
        WorkerFailure(type: "tollgate.UndecodableEvent", message: message, isTransient: false)
    }

    static func unsupportedVersion(_ message: String) -> WorkerFailure {
        WorkerFailure(type: "tollgate.UnsupportedSchemaVersion", message: message, isTransient: false)
    }
}
