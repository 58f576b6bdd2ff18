import Events

/// A refused request: a reason code plus a message for people that never carries a token, a key or a
/// secret; with a 503 or 429, when to ask again; with a 401 of the merchant APIs, the challenge.
/// The one refusal type of every domain: a sender's verification, the gateway's admission and HTTP
/// layer, and the merchant APIs' services.
public struct Rejection: Error, Sendable, CustomStringConvertible, Equatable {
    public let reason: any ReasonCode
    public let message: String
    /// `Retry-After`, in seconds.
    public var retryAfterSeconds: Int?
    /// `WWW-Authenticate` (a merchant API's 401).
    public var challenge: String?

    public init(_ reason: any ReasonCode, _ message: String, retryAfterSeconds: Int? = nil, challenge: String? = nil) {
        self.reason = reason
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
        self.challenge = challenge
    }

    /// The reason's code.
    public var code: String { reason.code }
    public var httpStatus: Int { reason.httpStatus }

    /// Whether this is `reason` (of its own domain).
    public func `is`<Reason: ReasonCode & Equatable>(_ reason: Reason) -> Bool {
        (self.reason as? Reason) == reason
    }

    public var description: String { "\(reason.code): \(message)" }

    public static func == (lhs: Rejection, rhs: Rejection) -> Bool {
        lhs.reason.code == rhs.reason.code && type(of: lhs.reason).domain == type(of: rhs.reason).domain
            && lhs.message == rhs.message && lhs.retryAfterSeconds == rhs.retryAfterSeconds && lhs.challenge == rhs.challenge
    }

    /// `{"error":"<reason code>","message":"..."}`: the body of every refusal over HTTP, and what
    /// `tollgate verify` prints for one.
    public var jsonBody: [UInt8] {
        var bytes = Array(#"{"error":"#.utf8)
        JSONText.appendString(reason.code, to: &bytes)
        bytes += Array(#","message":"#.utf8)
        JSONText.appendString(message, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}

extension Rejection {
    public init(_ reason: CommonReason, _ message: String, retryAfterSeconds: Int? = nil) {
        self.init(reason as any ReasonCode, message, retryAfterSeconds: retryAfterSeconds, challenge: nil)
    }
}
