import Verifiers

/// Why one of the workers' services (purchases, checkouts) refused a request: a reason code (its status
/// comes with it), a message for people that never carries a token, a key or a secret, and with a 503
/// when to ask again. The API answering it turns it into a `Rejection`.
public struct ServiceRefusal: Error, Sendable, Equatable {
    public var reason: RejectionReason
    public var message: String
    public var retryAfterSeconds: Int?

    public init(_ reason: RejectionReason, _ message: String, retryAfterSeconds: Int? = nil) {
        self.reason = reason; self.message = message; self.retryAfterSeconds = retryAfterSeconds
    }
}
