/// Why the spool could not take or give back a delivery.
public struct SpoolError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Taking the delivery would pass `spool.maxBytes`.
        case full
        /// The spool is closed (shutting down) or its file cannot be used.
        case unavailable
    }

    public let kind: Kind
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
