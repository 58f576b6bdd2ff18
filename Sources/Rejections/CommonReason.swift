/// The reasons any route may answer with, decided before (or apart from) what the route is for: the HTTP
/// layer's, admission's, the shape of a JSON body, durability.
public enum CommonReason: String, ReasonCode, CaseIterable {
    // 400: the request is not what its protocol defines.
    case malformedJSON = "malformed_json"
    /// The body stopped or broke before its end.
    case unreadableBody = "unreadable_body"
    case missingField = "missing_field"
    case invalidField = "invalid_field"
    /// The request head is not HTTP/1.1 (bad request line, header syntax, framing).
    case malformedRequest = "malformed_request"
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    /// The request head did not arrive completely within `http.headerTimeoutMs` of its first byte.
    case requestTimeout = "request_timeout"
    /// The body did not arrive completely within `http.bodyTimeoutMs` of the end of the head.
    case bodyTimeout = "body_timeout"
    case bodyTooLarge = "body_too_large"
    case unsupportedMediaType = "unsupported_media_type"
    /// The caller passed its rate (`limits.rates`, a credential's); `Retry-After` says when a request is admitted again.
    case rateLimited = "rate_limited"
    /// The request line and headers passed `http.maxHeaderBytes` or `http.maxHeaderCount`.
    case headersTooLarge = "headers_too_large"
    /// `limits.maxInFlight` or `limits.maxInFlightPerSource` requests are already being handled.
    case overloaded = "overloaded"
    /// The event could not be made durable (Kafka did not acknowledge in time).
    case notDurable = "not_durable"

    public static let domain = "common"

    public var httpStatus: Int {
        switch self {
        case .malformedJSON, .unreadableBody, .missingField, .invalidField, .malformedRequest: 400
        case .notFound: 404
        case .methodNotAllowed: 405
        case .requestTimeout, .bodyTimeout: 408
        case .bodyTooLarge: 413
        case .unsupportedMediaType: 415
        case .rateLimited: 429
        case .headersTooLarge: 431
        case .overloaded, .notDurable: 503
        }
    }
}
