/// Why a store operation failed, and whether trying again later may succeed.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The database cannot be reached or is busy (connection refused or lost, lock timeout,
        /// serialization failure after retries): a retry later may pass.
        case unavailable
        /// A constraint was violated (unique key, foreign key, not null).
        case constraint
        /// Anything else (bad SQL, bad URL, a schema newer than this binary): retrying will not help.
        case invalid
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var isTransient: Bool { kind == .unavailable }
    public var description: String { "\(kind): \(message)" }
}
