import Rejections

/// Why a sender's delivery was refused: its protocol, its authenticity, whom it is for (docs/reason-codes.md).
public enum WebhookReason: String, ReasonCode, CaseIterable {
    case malformedJWS = "malformed_jws"
    case invalidCertificate = "invalid_certificate"
    case invalidChainLength = "invalid_chain_length"
    /// An App Store Server Notifications V1 body.
    case unsupportedVersion = "unsupported_version"
    /// A header that must appear once (credentials, signatures, Content-Type) appears more often.
    case duplicateHeader = "duplicate_header"
    /// Not `application/x-www-form-urlencoded` text: a bad `%` escape, invalid UTF-8 or a repeated name.
    case malformedForm = "malformed_form"
    /// A name listed in Citcon's `fields` is absent from the body.
    case missingSignedField = "missing_signed_field"
    /// A signed value whose string form the sender does not define (Citcon: null, boolean, object, array).
    case invalidSignedValue = "invalid_signed_value"
    /// A field the event needs is present but not covered by the signature.
    case unsignedField = "unsigned_field"
    /// A signature header that is not the sender's grammar (Alipay+: not URL-encoded standard base64).
    case malformedSignature = "malformed_signature"
    case missingPassword = "missing_password"
    case wrongPassword = "wrong_password"
    case unsupportedAlg = "unsupported_alg"
    case untrustedChain = "untrusted_chain"
    case missingAppleOID = "missing_apple_oid"
    case certificateExpired = "certificate_expired"
    case badSignature = "bad_signature"
    /// The certificate's OCSP responder says it is revoked (online checks).
    case certificateRevoked = "certificate_revoked"
    case missingSignature = "missing_signature"
    /// Alipay+ `keyVersion` names no configured platform key of that client.
    case unknownKeyVersion = "unknown_key_version"
    /// Alipay+: the signed `Request-Time` is older than `maxRequestAgeSeconds`, or further ahead than
    /// `maxRequestClockSkewSeconds`: a captured delivery replayed later, or a wrong clock.
    case requestTimeOutsideWindow = "request_time_outside_window"
    /// Google: no `Authorization: Bearer` token on the push.
    case missingAuthorization = "missing_authorization"
    /// Google: the bearer token is not a JWT with a JSON header and payload.
    case malformedToken = "malformed_token"
    /// Google: the token's `kid` is not in the key set, even after the allowed refetch.
    case unknownKeyId = "unknown_kid"
    case wrongIssuer = "wrong_issuer"
    case wrongAudience = "wrong_audience"
    /// Google: the token was issued for another service account than the push subscription's.
    case wrongEmail = "wrong_email"
    case emailNotVerified = "email_not_verified"
    /// Google: `iat` or `exp` missing, not whole seconds, or `exp` not after `iat`.
    case invalidTokenTime = "invalid_token_time"
    case tokenExpired = "token_expired"
    case tokenNotYetValid = "token_not_yet_valid"
    case unknownApp = "unknown_app"
    case wrongEnvironment = "wrong_environment"
    /// Alipay+ `Client-Id` that is not configured.
    case unknownClient = "unknown_client"
    /// Google: an RTDN for a `packageName` that is not configured.
    case unknownPackage = "unknown_package"
    case unknownAccount = "unknown_account"
    /// Online checks are on and no valid OCSP answer could be had: the sender should retry later.
    case revocationCheckFailed = "revocation_check_failed"
    /// Google: no key set could be loaded yet (unreachable URL), so no token can be checked: retry later.
    case keySetUnavailable = "key_set_unavailable"

    public static let domain = "webhook"

    public var httpStatus: Int {
        switch self {
        case .malformedJWS, .invalidCertificate, .invalidChainLength, .unsupportedVersion, .duplicateHeader, .malformedForm, .missingSignedField, .invalidSignedValue, .unsignedField, .malformedSignature: 400
        case .missingPassword, .wrongPassword, .unsupportedAlg, .untrustedChain, .missingAppleOID, .certificateExpired, .badSignature, .certificateRevoked, .missingSignature, .unknownKeyVersion, .requestTimeOutsideWindow, .missingAuthorization, .malformedToken, .unknownKeyId, .wrongIssuer, .wrongAudience, .wrongEmail, .emailNotVerified, .invalidTokenTime, .tokenExpired, .tokenNotYetValid: 401
        case .unknownApp, .wrongEnvironment, .unknownClient, .unknownPackage: 403
        case .unknownAccount: 404
        case .revocationCheckFailed, .keySetUnavailable: 503
        }
    }
}

extension Rejection {
    /// A sender's refusal.
    public init(_ reason: WebhookReason, _ message: String) {
        self.init(reason as any ReasonCode, message, retryAfterSeconds: nil, challenge: nil)
    }
}
