/// A Play Developer API call that gave no usable answer. Messages carry Google's error status and
/// text at most, never an access token or the service-account key.
public struct PlayAPIError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// No HTTP answer: refused, reset, TLS, an unusable URL.
        case network
        /// No answer within the configured timeout.
        case timeout
        /// An HTTP status other than 2xx and 410.
        case http(status: Int)
        /// A 2xx answer whose body is not the documented JSON.
        case decode
        /// The service-account JWT could not be signed.
        case signing
        /// A package name, product id or token that cannot be a path segment.
        case invalidArgument
    }

    public let call: PlayAPICall
    public let kind: Kind
    public let message: String
    /// With a 429: Google's `Retry-After` in whole seconds, when it sent one.
    public let retryAfterSeconds: Int?

    public init(call: PlayAPICall, kind: Kind, message: String, retryAfterSeconds: Int? = nil) {
        self.call = call
        self.kind = kind
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// True when asking again later may succeed, so the event goes to the retry path rather than
    /// being given up on.
    public var isTransient: Bool {
        // Without a token nothing works, and the causes (a rotated or revoked key, Google down)
        // are fixed outside this event: once fixed, the retry or dead-letter path replays it.
        if call == .token { return true }
        switch kind {
        case .network, .timeout, .signing: return true
        // 401 and 403 after a fresh token: credentials or their grants may be rotating.
        case .http(let status): return status >= 500 || status == 429 || status == 408 || status == 401 || status == 403
        case .decode, .invalidArgument: return false
        }
    }

    /// The `kind` dimension of `tollgate_play_api_errors_total`: `http_503`, `timeout`, `network`, `decode`...
    public var kindLabel: String {
        switch kind {
        case .network: "network"
        case .timeout: "timeout"
        case .http(let status): "http_\(status)"
        case .decode: "decode"
        case .signing: "signing"
        case .invalidArgument: "invalid_argument"
        }
    }

    public var description: String {
        "Play API \(call.rawValue) call failed (\(kindLabel), \(isTransient ? "transient" : "permanent")): \(message)"
    }
}
