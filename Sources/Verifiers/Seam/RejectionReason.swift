import Events

/// Why a request was refused: a webhook delivery, or a call to the entitlement API. The one mapping
/// from a reason to the HTTP status, the `tollgate_rejections_total{reason}` label, the log field,
/// `tollgate verify`'s error code and the `{"error","message"}` body (docs/reason-codes.md).
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
    // 403: authentic, but for an app/client this gateway is not configured for.
    case unknownApp = "unknown_app"
    case wrongEnvironment = "wrong_environment"
    /// Alipay+ `Client-Id` that is not configured.
    case unknownClient = "unknown_client"
    /// Google: an RTDN for a `packageName` that is not configured.
    case unknownPackage = "unknown_package"
    // 404: a per-account route (`/webhooks/citcon/<account>`) naming no configured account.
    case unknownAccount = "unknown_account"
    // Protocol-level rejections decided by the gateway before a sender sees the request.
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case bodyTooLarge = "body_too_large"
    case unsupportedMediaType = "unsupported_media_type"
    /// The event could not be made durable (Kafka did not acknowledge in time).
    case notDurable = "not_durable"
    /// Online checks are on and no valid OCSP answer could be had: the sender should retry later.
    case revocationCheckFailed = "revocation_check_failed"
    /// Google: no key set could be loaded yet (unreachable URL), so no token can be checked: retry later.
    case keySetUnavailable = "key_set_unavailable"
    // Decided by the HTTP layer and admission, before a route reads the body.
    /// The request head is not HTTP/1.1 (bad request line, header syntax, framing).
    case malformedRequest = "malformed_request"
    /// The request head did not arrive completely within `http.headerTimeoutMs` of its first byte.
    case requestTimeout = "request_timeout"
    /// The body did not arrive completely within `http.bodyTimeoutMs` of the end of the head.
    case bodyTimeout = "body_timeout"
    /// The sender passed its `limits.rates` allowance; `Retry-After` says when a request is admitted again.
    case rateLimited = "rate_limited"
    /// The request line and headers passed `http.maxHeaderBytes` or `http.maxHeaderCount`.
    case headersTooLarge = "headers_too_large"
    /// `limits.maxInFlight` or `limits.maxInFlightPerSource` requests are already being handled.
    case overloaded = "overloaded"
    // The entitlement API (docs/workers.md).
    /// No bearer token from `api.tokens`, or more than one `Authorization` header.
    case unauthorized = "unauthorized"
    /// The bearer token is limited to apps (`api.tokens`) and the asked app is not one of them.
    case appNotAllowed = "app_not_allowed"
    /// The path names no user.
    case missingUser = "missing_user"
    /// The `app` query parameter is missing or empty.
    case missingApp = "missing_app"
    /// The `environment` query parameter is neither `production` nor `sandbox`.
    case invalidEnvironment = "invalid_environment"
    /// No purchase of this user in this app.
    case unknownUser = "unknown_user"
    /// The entitlement store cannot answer now.
    case storeUnavailable = "store_unavailable"
    /// Purchases: the store does not know this purchase (or no longer does), or what it says does not
    /// match the claim (another app, product or environment).
    case purchaseNotFound = "purchase_not_found"
    /// Purchases: another user holds this purchase and the app's ownership policy is `keep`.
    case alreadyOwned = "already_owned"
    /// Purchases: the store's server API (App Store Server API, Play Developer API) cannot be reached or
    /// answers with an error of its own; nothing was applied, ask again after `Retry-After`.
    case storeAPIUnavailable = "store_api_unavailable"
    /// Purchases: `apple.receipt` is not a base64 PKCS#7 app receipt.
    case invalidReceipt = "invalid_receipt"
    /// Purchases: the receipt verifies as Apple's, but for another bundle id than the app asked about.
    case receiptAppMismatch = "receipt_app_mismatch"
    // The Sileo Payment Provider API (docs/sileo.md).
    /// Sileo: no token, or one that is unknown, expired or signed out; the answer says `invalidate: true`.
    case invalidSileoToken = "invalid_sileo_token"
    /// Sileo: the purchase's `payment_secret` is not the one issued with the token.
    case wrongPaymentSecret = "wrong_payment_secret"
    /// Sileo: the path names no package of the vendor's catalog.
    case unknownSileoPackage = "unknown_sileo_package"
    /// Sileo: the package is in the catalog but not for sale now (`available: false`).
    case packageUnavailable = "package_unavailable"
    /// Sileo: a download asked for by a user not entitled to the package.
    case notEntitled = "not_entitled"
    /// Sileo: a download key that is unknown, already used or expired.
    case invalidDownloadKey = "invalid_download_key"
    /// Sileo: the sign-in assertion is not a compact JWS, not ES256, not signed by the vendor's key, or lacks a claim.
    case invalidAssertion = "invalid_assertion"
    /// Sileo: the sign-in assertion's `exp` has passed, or it lives longer than Tollgate accepts.
    case assertionExpired = "assertion_expired"
    /// Sileo: the assertion's nonce was not issued by this vendor's /authenticate, was used already, has
    /// expired, or belongs to another browser.
    case invalidNonce = "invalid_nonce"
    /// Sileo: no checkout provider is wired into this process, so nothing can be sold now.
    case checkoutsUnavailable = "checkouts_unavailable"
    /// Sileo: the checkout started but its provider gives no payment page to send the user to.
    case noPaymentPage = "no_payment_page"
    /// Purchases: a Google purchase, and no Play Developer API credentials are configured
    /// (`sources.google.playApi.credentialsFile`), so no Google purchase can be verified here.
    case playAPINotConfigured = "play_api_not_configured"
    /// Checkouts: the provider, or the account the app names, is not configured for checkouts (no
    /// such Alipay+ client or Citcon account, no merchant key, no `checkouts.publicBaseUrl`).
    case providerNotConfigured = "provider_not_configured"
    /// Checkouts: a pending checkout of this user and product exists with another amount or currency.
    case checkoutConflict = "checkout_conflict"
    /// Checkouts: no checkout with this id (for this token's apps).
    case checkoutNotFound = "checkout_not_found"
    /// Checkouts: the provider refused to start the payment (Antom `resultStatus` F); nothing was kept.
    case paymentRefused = "payment_refused"
    /// Checkouts: the provider cannot be reached, answers 5xx, `U`, or an answer whose signature does
    /// not verify; nothing was kept, ask again after `Retry-After`.
    case paymentProviderUnavailable = "payment_provider_unavailable"
    /// Checkouts: only a paid Antom checkout can be refunded through Tollgate (Citcon's refunds are
    /// started at Citcon; their IPN takes the checkout back).
    case checkoutNotRefundable = "checkout_not_refundable"
    /// Checkouts: Antom refused the refund (`resultStatus` F, e.g. REFUND_WINDOW_EXCEED); the checkout stays paid.
    case refundRefused = "refund_refused"
    /// Checkouts: the token is not configured `refunds: true` (`api.tokens`), so it cannot ask for refunds.
    case refundNotAllowed = "refund_not_allowed"
    /// Merchant APIs: a client credential named a user without that user's token (`Tollgate-User-Token`).
    case userTokenRequired = "user_token_required"
    /// Merchant APIs: the user token is not an ES256 JWT for this app signed with `api.userTokenKeys`, or lives too long.
    case invalidUserToken = "invalid_user_token"
    /// Merchant APIs: the user token's `exp` has passed.
    case userTokenExpired = "user_token_expired"
    /// Merchant APIs: the user token names another user than the request does.
    case userNotAllowed = "user_not_allowed"
    /// Merchant APIs: a client credential reported a purchase without a proof of possession (a bare transaction id).
    case proofRequired = "proof_of_possession_required"
    /// Merchant APIs: the route is for the merchant's servers (a server credential) only.
    case serverCredentialRequired = "server_credential_required"
    /// Checkouts: the catalog has no such product for this app (`catalog.apps[].products`).
    case unknownProduct = "unknown_product"
    /// Checkouts: the catalog gives the product no price in this currency.
    case currencyNotOffered = "currency_not_offered"
    /// Checkouts: the amount sent is not the catalog's price (the amount always comes from the catalog).
    case priceMismatch = "price_mismatch"

    public var httpStatus: Int {
        switch self {
        case .malformedJSON, .unreadableBody, .missingField, .invalidField, .malformedJWS, .invalidCertificate, .invalidChainLength,
             .unsupportedVersion, .duplicateHeader, .malformedForm, .missingSignedField, .invalidSignedValue, .unsignedField,
             .malformedSignature, .malformedRequest, .missingUser, .missingApp, .invalidEnvironment: 400
        case .missingPassword, .wrongPassword, .unsupportedAlg, .untrustedChain, .missingAppleOID, .certificateExpired,
             .badSignature, .certificateRevoked, .missingSignature, .unknownKeyVersion, .requestTimeOutsideWindow,
             .missingAuthorization, .malformedToken, .unknownKeyId, .wrongIssuer, .wrongAudience, .wrongEmail,
             .emailNotVerified, .invalidTokenTime, .tokenExpired, .tokenNotYetValid, .unauthorized,
             .invalidSileoToken, .invalidAssertion, .assertionExpired, .invalidNonce, .userTokenRequired, .invalidUserToken,
             .userTokenExpired: 401
        case .unknownApp, .wrongEnvironment, .unknownClient, .unknownPackage, .appNotAllowed, .playAPINotConfigured,
             .wrongPaymentSecret, .notEntitled, .invalidDownloadKey, .refundNotAllowed, .userNotAllowed, .proofRequired,
             .serverCredentialRequired: 403
        case .notFound, .unknownAccount, .unknownUser, .unknownSileoPackage: 404
        case .methodNotAllowed: 405
        case .alreadyOwned, .packageUnavailable: 409
        case .purchaseNotFound, .invalidReceipt, .receiptAppMismatch: 422
        case .requestTimeout, .bodyTimeout: 408
        case .bodyTooLarge: 413
        case .unsupportedMediaType: 415
        case .rateLimited: 429
        case .headersTooLarge: 431
        case .noPaymentPage: 502
        case .providerNotConfigured: 403
        case .checkoutNotFound: 404
        case .checkoutConflict, .checkoutNotRefundable: 409
        case .paymentRefused, .refundRefused, .unknownProduct, .currencyNotOffered, .priceMismatch: 422
        case .notDurable, .revocationCheckFailed, .keySetUnavailable, .overloaded, .storeUnavailable, .storeAPIUnavailable,
             .checkoutsUnavailable, .paymentProviderUnavailable: 503
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

    /// `{"error":"<reason code>","message":"..."}`: the body of every refusal over HTTP, and what
    /// `tollgate verify` prints for one.
    public var jsonBody: [UInt8] {
        var bytes = Array(#"{"error":"#.utf8)
        JSONText.appendString(reason.rawValue, to: &bytes)
        bytes += Array(#","message":"#.utf8)
        JSONText.appendString(message, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}
