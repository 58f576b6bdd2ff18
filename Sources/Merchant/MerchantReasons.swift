import Rejections

/// Why a merchant API refused its caller: the credential, its user token, what its kind may do (docs/security.md).
public enum CredentialReason: String, ReasonCode, CaseIterable {
    /// No bearer token from `api.tokens`, or more than one `Authorization` header.
    case unauthorized = "unauthorized"
    /// The bearer token is limited to apps (`api.tokens`) and the asked app is not one of them.
    case appNotAllowed = "app_not_allowed"
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
    /// Checkouts: the token is not configured `refunds: true` (`api.tokens`), so it cannot ask for refunds.
    case refundNotAllowed = "refund_not_allowed"

    public static let domain = "credentials"

    public var httpStatus: Int {
        switch self {
        case .unauthorized, .userTokenRequired, .invalidUserToken, .userTokenExpired: 401
        case .appNotAllowed, .userNotAllowed, .proofRequired, .serverCredentialRequired, .refundNotAllowed: 403
        }
    }
}

/// Why the entitlement API refused a query.
public enum EntitlementReason: String, ReasonCode, CaseIterable {
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

    public static let domain = "entitlements"

    public var httpStatus: Int {
        switch self {
        case .missingUser, .missingApp, .invalidEnvironment: 400
        case .unknownUser: 404
        case .storeUnavailable: 503
        }
    }
}

/// Why a reported purchase was refused (`POST /v1/purchases`, `/v1/validate`).
public enum PurchaseReason: String, ReasonCode, CaseIterable {
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
    /// Purchases: a Google purchase, and no Play Developer API credentials are configured
    /// (`sources.google.playApi.credentialsFile`), so no Google purchase can be verified here.
    case playAPINotConfigured = "play_api_not_configured"
    /// Refresh: no purchase has this purchase id (or the id is not one).
    case unknownPurchase = "unknown_purchase"
    /// Refresh: the purchase's store has no API Tollgate reads it from (Iaptic, Citcon, Alipay+ purchases
    /// are told by their notifications), or the app has no API credentials for it.
    case refreshNotSupported = "refresh_not_supported"

    public static let domain = "purchases"

    public var httpStatus: Int {
        switch self {
        case .playAPINotConfigured: 403
        case .unknownPurchase: 404
        case .alreadyOwned: 409
        case .refreshNotSupported: 422
        case .purchaseNotFound, .invalidReceipt, .receiptAppMismatch: 422
        case .storeAPIUnavailable: 503
        }
    }
}

/// Why a checkout, or its refund, was refused (docs/checkouts.md).
public enum CheckoutReason: String, ReasonCode, CaseIterable {
    /// Checkouts: the provider, or the account the app names, is not configured for checkouts (no
    /// such Alipay+ client or Citcon account, no merchant key, no `checkouts.publicBaseURL`).
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
    /// Checkouts: the catalog has no such product for this app (`catalog.apps[].products`).
    case unknownProduct = "unknown_product"
    /// Checkouts: the catalog gives the product no price in this currency.
    case currencyNotOffered = "currency_not_offered"
    /// Checkouts: the amount sent is not the catalog's price (the amount always comes from the catalog).
    case priceMismatch = "price_mismatch"

    public static let domain = "checkouts"

    public var httpStatus: Int {
        switch self {
        case .providerNotConfigured: 403
        case .checkoutNotFound: 404
        case .checkoutConflict, .checkoutNotRefundable: 409
        case .paymentRefused, .refundRefused, .unknownProduct, .currencyNotOffered, .priceMismatch: 422
        case .paymentProviderUnavailable: 503
        }
    }
}

/// Why the Sileo Payment Provider API refused a call (docs/sileo.md).
public enum SileoReason: String, ReasonCode, CaseIterable {
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

    public static let domain = "sileo"

    public var httpStatus: Int {
        switch self {
        case .invalidSileoToken, .invalidAssertion, .assertionExpired, .invalidNonce: 401
        case .wrongPaymentSecret, .notEntitled, .invalidDownloadKey: 403
        case .unknownSileoPackage: 404
        case .packageUnavailable: 409
        case .noPaymentPage: 502
        case .checkoutsUnavailable: 503
        }
    }
}

// One initializer per domain, so a refusal names its reason as `.purchaseNotFound`; internal, so a
// module sees only its own domains' names beside the common ones.
extension Rejection {
    init(_ reason: CredentialReason, _ message: String, retryAfterSeconds: Int? = nil, challenge: String? = nil) {
        self.init(reason as any ReasonCode, message, retryAfterSeconds: retryAfterSeconds, challenge: challenge)
    }

    init(_ reason: EntitlementReason, _ message: String, retryAfterSeconds: Int? = nil) {
        self.init(reason as any ReasonCode, message, retryAfterSeconds: retryAfterSeconds, challenge: nil)
    }

    init(_ reason: PurchaseReason, _ message: String, retryAfterSeconds: Int? = nil) {
        self.init(reason as any ReasonCode, message, retryAfterSeconds: retryAfterSeconds, challenge: nil)
    }

    init(_ reason: CheckoutReason, _ message: String, retryAfterSeconds: Int? = nil) {
        self.init(reason as any ReasonCode, message, retryAfterSeconds: retryAfterSeconds, challenge: nil)
    }

    init(_ reason: SileoReason, _ message: String, retryAfterSeconds: Int? = nil) {
        self.init(reason as any ReasonCode, message, retryAfterSeconds: retryAfterSeconds, challenge: nil)
    }
}

/// The merchant features' reason enums, as `tollgate describe` lists them.
public enum MerchantReasons {
    public static let lists = [ReasonCodeList(CredentialReason.self), ReasonCodeList(EntitlementReason.self), ReasonCodeList(PurchaseReason.self),
                               ReasonCodeList(CheckoutReason.self), ReasonCodeList(SileoReason.self)]
}
