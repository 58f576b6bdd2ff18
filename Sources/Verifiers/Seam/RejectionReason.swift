/// Why a delivery was refused. The one mapping from a reason to the HTTP status, the
/// `tollgate_rejections_total{reason}` label, the log field and `tollgate verify`'s error code.
public enum RejectionReason: String, Sendable, CaseIterable, Error {
    // 400: the request is not what the sender's protocol defines.
    case malformedJSON = "malformed_json"
    /// The body stopped or broke before its end.
    case unreadableBody = "unreadable_body"
    case missingField = "missing_field"
    case invalidField = "invalid_field"
    case malformedJWS = "malformed_jws"
    case invalidCertificate = "invalid_certificate"
    case invalidChainLength = "invalid_chain_length"
    /// An App Store Server Notifications V1 body.
    case unsupportedVersion = "unsupported_version"
    // 401: authenticity missing or failed.
    case missingPassword = "missing_password"
    case wrongPassword = "wrong_password"
    case unsupportedAlg = "unsupported_alg"
    case untrustedChain = "untrusted_chain"
    case missingAppleOID = "missing_apple_oid"
    case certificateExpired = "certificate_expired"
    case badSignature = "bad_signature"
    /// The certificate's OCSP responder says it is revoked (online checks).
    case certificateRevoked = "certificate_revoked"
    // 403: authentic, but for an app/client this gateway is not configured for.
    case unknownApp = "unknown_app"
    case wrongEnvironment = "wrong_environment"
    // Protocol-level rejections decided by the gateway before a sender sees the request.
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case bodyTooLarge = "body_too_large"
    case unsupportedMediaType = "unsupported_media_type"
    case notImplemented = "not_implemented"
    /// The event could not be made durable (Kafka did not acknowledge in time).
    case notDurable = "not_durable"
    /// Online checks are on and no valid OCSP answer could be had: the sender should retry later.
    case revocationCheckFailed = "revocation_check_failed"

    public var httpStatus: Int {
        switch self {
        case .malformedJSON, .unreadableBody, .missingField, .invalidField, .malformedJWS, .invalidCertificate, .invalidChainLength,
             .unsupportedVersion: 400
        case .missingPassword, .wrongPassword, .unsupportedAlg, .untrustedChain, .missingAppleOID, .certificateExpired,
             .badSignature, .certificateRevoked: 401
        case .unknownApp, .wrongEnvironment: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .bodyTooLarge: 413
        case .unsupportedMediaType: 415
        case .notImplemented: 501
        case .notDurable, .revocationCheckFailed: 503
        }
    }
}

/// A refused delivery: a reason code plus a message for people (never containing secrets).
public struct Rejection: Error, Sendable, CustomStringConvertible {
    public let reason: RejectionReason
    public let message: String

    public init(_ reason: RejectionReason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}
