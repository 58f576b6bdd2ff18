/// An App Store Server API call that gave no usable answer. Messages carry Apple's error code and
/// text at most, never the JWT or the key.
public struct AppStoreAPIError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// No HTTP answer: refused, reset, TLS, an unusable URL.
        case network
        /// No answer within the configured timeout.
        case timeout
        /// A non-2xx answer; `code` is Apple's `errorCode` when the body carried one.
        case http(status: Int, code: AppStoreAPIErrorCode?)
        /// 429: Apple's rate limit. `retryAfterSeconds` from `Retry-After`, else a minute.
        case rateLimited(retryAfterSeconds: Int)
        /// A 2xx answer whose body is not the documented JSON.
        case decode
        /// The JWT could not be signed with the configured key.
        case signing
        /// An id that cannot be a path segment.
        case invalidArgument
    }

    public let call: AppStoreAPICall
    public let kind: Kind
    public let message: String

    public init(call: AppStoreAPICall, kind: Kind, message: String) {
        self.call = call
        self.kind = kind
        self.message = message
    }

    /// Apple's "not found" for the id asked about: in the other environment it may exist (Apple's
    /// advice: ask production first, then sandbox).
    public var isNotFound: Bool {
        guard case .http(404, let code) = kind else { return false }
        return code.map(\.isNotFound) ?? false
    }

    /// True when asking again later may succeed by itself.
    public var isTransient: Bool {
        switch kind {
        case .network, .timeout, .rateLimited, .signing: true
        // 401 is Apple refusing the key (the client already retried with a fresh token): nothing changes
        // until someone fixes the key, so it is permanent (`isKeyRefused`).
        case .http(let status, let code): status >= 500 || (code?.isRetryable ?? false)
        case .decode, .invalidArgument: false
        }
    }

    /// Apple refused the request's credentials: the key's issuer id, key id or .p8 is wrong, revoked or
    /// not yet active (the client already asked once more with a new token).
    public var isKeyRefused: Bool {
        if case .http(401, _) = kind { return true }
        return false
    }

    /// The `kind` dimension of `tollgate_app_store_api_errors_total`: `http_404`, `rate_limited`, `timeout`...
    public var kindLabel: String {
        switch kind {
        case .network: "network"
        case .timeout: "timeout"
        case .http(let status, _): "http_\(status)"
        case .rateLimited: "rate_limited"
        case .decode: "decode"
        case .signing: "signing"
        case .invalidArgument: "invalid_argument"
        }
    }

    public var description: String {
        "App Store Server API \(call.rawValue) call failed (\(kindLabel), \(isTransient ? "transient" : "permanent")): \(message)"
    }
}

/// The `errorCode`s of Apple's error responses this client acts on or names (Apple's
/// "App Store Server API" error codes); any other code is kept as its number in the message.
public enum AppStoreAPIErrorCode: Int, Sendable, Hashable {
    case generalBadRequest = 4000000
    case invalidAppIdentifier = 4000002
    case invalidRequestRevision = 4000005
    case invalidTransactionId = 4000006
    case invalidOriginalTransactionId = 4000008
    case startDateTooFarInPast = 4000012
    case startDateAfterEndDate = 4000013
    case invalidPaginationToken = 4000014
    case invalidStartDate = 4000015
    case invalidEndDate = 4000016
    case paginationTokenExpired = 4000017
    case invalidNotificationType = 4000018
    case multipleFiltersSupplied = 4000019
    case invalidTestNotificationToken = 4000020
    case accountNotFound = 4040001
    case accountNotFoundRetryable = 4040002
    case appNotFound = 4040003
    case appNotFoundRetryable = 4040004
    case originalTransactionIdNotFound = 4040005
    case originalTransactionIdNotFoundRetryable = 4040006
    case serverNotificationURLNotFound = 4040007
    case testNotificationNotFound = 4040008
    case statusRequestNotFound = 4040009
    case transactionIdNotFound = 4040010
    case rateLimitExceeded = 4290000
    case generalInternal = 5000000
    case generalInternalRetryable = 5000001

    /// The id is unknown in the environment asked.
    var isNotFound: Bool {
        switch self {
        case .transactionIdNotFound, .originalTransactionIdNotFound, .originalTransactionIdNotFoundRetryable: true
        default: false
        }
    }

    /// Apple's "Retryable" variants: try again later.
    var isRetryable: Bool {
        switch self {
        case .accountNotFoundRetryable, .appNotFoundRetryable, .originalTransactionIdNotFoundRetryable,
             .generalInternalRetryable, .rateLimitExceeded: true
        default: false
        }
    }
}

/// The endpoint a request went to: the `call` dimension of the client's metrics.
public enum AppStoreAPICall: String, Sendable, CaseIterable {
    case transactionInfo = "transaction_info"
    case transactionHistory = "transaction_history"
    case subscriptionStatuses = "subscription_statuses"
    case notificationHistory = "notification_history"
    case requestTestNotification = "request_test_notification"
    case testNotificationStatus = "test_notification_status"
    case sendConsumptionInformation = "send_consumption_information"
    case setAppAccountToken = "set_app_account_token"
}
