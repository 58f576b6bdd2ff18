import Foundation
import Logging
import Metrics
import Toolkit

/// Apple's server environments, as the API and the signed payloads name them.
public enum AppStoreEnvironment: String, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
}

/// The App Store Server API for one app: its transactions, subscription statuses, notification
/// history and test notifications, in production or sandbox. Answers carry Apple's signed JWS as
/// received; the caller verifies them (the chain verifier of the notifications).
///
/// Each request carries the app's JWT (`AppStoreTokenSigner`); a 401 drops it and retries the call
/// once with a new one. A 429 is not retried here: the error says when to try again, and the caller
/// (a request that answers 503 with `Retry-After`, or a backfill that waits) decides.
public struct AppStoreAPIClient: Sendable {
    /// Apple's documented base URLs; tests and proxies configure others.
    public struct BaseURLs: Sendable {
        public var production: String
        public var sandbox: String
        public static let apple = BaseURLs(production: "https://api.storekit.apple.com", sandbox: "https://api.storekit-sandbox.apple.com")
        public init(production: String, sandbox: String) {
            self.production = production
            self.sandbox = sandbox
        }

        func url(_ environment: AppStoreEnvironment) -> String {
            var base = environment == .production ? production : sandbox
            while base.hasSuffix("/") { base.removeLast() }
            return base
        }
    }

    /// When Apple answers 429 without a usable `Retry-After`.
    static let defaultRetryAfterSeconds = 60

    public let credentials: AppStoreAPICredentials
    private let baseURLs: BaseURLs
    private let fetcher: any HTTPFetcher
    private let timeout: Duration
    private let logger: Logger
    private let metrics: AppStoreAPIMetrics
    private let signer: AppStoreTokenSigner

    public init(credentials: AppStoreAPICredentials, baseURLs: BaseURLs = .apple, fetcher: any HTTPFetcher,
                timeout: Duration = .seconds(10), logger: Logger, metricsFactory: any MetricsFactory = MetricsSystem.factory,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.credentials = credentials
        self.baseURLs = baseURLs
        self.fetcher = fetcher
        self.timeout = timeout
        self.logger = logger
        metrics = AppStoreAPIMetrics(factory: metricsFactory)
        signer = AppStoreTokenSigner(credentials: credentials, now: now)
    }

    /// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}`.
    public func transactionInfo(_ transactionId: String, in environment: AppStoreEnvironment) async throws(AppStoreAPIError) -> TransactionInfoResponse {
        try await send(.transactionInfo, environment, path: ["inApps", "v1", "transactions", transactionId])
    }

    /// Get Transaction History v2: `GET /inApps/v2/history/{transactionId}`, one page; pass the
    /// previous page's `revision` for the next.
    public func transactionHistory(_ transactionId: String, revision: String? = nil,
                                   in environment: AppStoreEnvironment) async throws(AppStoreAPIError) -> TransactionHistoryPage {
        try await send(.transactionHistory, environment, path: ["inApps", "v2", "history", transactionId],
                       query: revision.map { [("revision", $0)] } ?? [])
    }

    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}`.
    public func subscriptionStatuses(_ transactionId: String, in environment: AppStoreEnvironment) async throws(AppStoreAPIError) -> SubscriptionStatusesResponse {
        try await send(.subscriptionStatuses, environment, path: ["inApps", "v1", "subscriptions", transactionId])
    }

    /// Get Notification History: `POST /inApps/v1/notifications/history`, one page; pass the previous
    /// page's `paginationToken` (with the same request) for the next.
    public func notificationHistory(_ request: NotificationHistoryRequest, paginationToken: String? = nil,
                                    in environment: AppStoreEnvironment) async throws(AppStoreAPIError) -> NotificationHistoryPage {
        let body: [UInt8]
        do {
            body = try [UInt8](JSONEncoder().encode(request))
        } catch {
            throw failure(.notificationHistory, .invalidArgument, "the request cannot be encoded")
        }
        return try await send(.notificationHistory, environment, method: "POST", path: ["inApps", "v1", "notifications", "history"],
                              query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: body)
    }

    /// Request a Test Notification: `POST /inApps/v1/notifications/test`.
    public func requestTestNotification(in environment: AppStoreEnvironment) async throws(AppStoreAPIError) -> TestNotificationRequested {
        try await send(.requestTestNotification, environment, method: "POST", path: ["inApps", "v1", "notifications", "test"])
    }

    /// Get Test Notification Status: `GET /inApps/v1/notifications/test/{testNotificationToken}`.
    public func testNotificationStatus(_ token: String, in environment: AppStoreEnvironment) async throws(AppStoreAPIError) -> TestNotificationStatus {
        try await send(.testNotificationStatus, environment, path: ["inApps", "v1", "notifications", "test", token])
    }

    /// Send Consumption Information: `PUT /inApps/v2/transactions/consumption/{transactionId}`, the
    /// answer to a `CONSUMPTION_REQUEST` for that transaction. Apple answers 202 with no body.
    public func sendConsumptionInformation(_ transactionId: String, _ request: ConsumptionRequest,
                                           in environment: AppStoreEnvironment) async throws(AppStoreAPIError) {
        let body: [UInt8]
        do {
            body = try [UInt8](JSONEncoder().encode(request))
        } catch {
            throw failure(.sendConsumptionInformation, .invalidArgument, "the request cannot be encoded")
        }
        _ = try await exchange(.sendConsumptionInformation, environment, method: "PUT",
                               path: ["inApps", "v2", "transactions", "consumption", transactionId], body: body)
    }

    /// Set App Account Token: `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken` with
    /// `{"appAccountToken": <UUID>}`: Apple puts the token on the purchase's current and later
    /// transactions and renewal info. Apple answers 200; a family-shared transaction is refused (4000185).
    public func setAppAccountToken(_ originalTransactionId: String, token: String, in environment: AppStoreEnvironment) async throws(AppStoreAPIError) {
        struct Body: Encodable { var appAccountToken: String }
        let body: [UInt8]
        do { body = try [UInt8](JSONEncoder().encode(Body(appAccountToken: token))) } catch {
            throw failure(.setAppAccountToken, .invalidArgument, "the request cannot be encoded")
        }
        _ = try await exchange(.setAppAccountToken, environment, method: "PUT",
                               path: ["inApps", "v1", "transactions", originalTransactionId, "appAccountToken"], body: body)
    }

    /// Production first, then sandbox when production does not know the id, as Apple advises for
    /// ids whose environment the caller cannot tell (App Review and TestFlight buy in sandbox).
    public func productionThenSandbox<T: Sendable>(
        _ call: (AppStoreEnvironment) async throws(AppStoreAPIError) -> T
    ) async throws(AppStoreAPIError) -> (T, AppStoreEnvironment) {
        do {
            return (try await call(.production), .production)
        } catch where error.isNotFound {
            return (try await call(.sandbox), .sandbox)
        }
    }

    private func send<Model: Decodable>(_ call: AppStoreAPICall, _ environment: AppStoreEnvironment, method: String = "GET",
                                        path: [String], query: [(String, String)] = [], body: [UInt8] = []) async throws(AppStoreAPIError) -> Model {
        let answer = try await exchange(call, environment, method: method, path: path, query: query, body: body)
        do {
            return try JSONDecoder().decode(Model.self, from: Data(answer))
        } catch {
            throw failure(call, .decode, "the answer is not a \(Model.self)")
        }
    }

    /// One call: the body of its 2xx answer, or the error that says why there is none.
    private func exchange(_ call: AppStoreAPICall, _ environment: AppStoreEnvironment, method: String,
                          path: [String], query: [(String, String)] = [], body: [UInt8] = []) async throws(AppStoreAPIError) -> [UInt8] {
        var url = baseURLs.url(environment)
        for segment in path {
            guard let encoded = PercentEncoding.pathSegment(segment) else {
                throw failure(call, .invalidArgument, "an id is empty, \".\" or \"..\"")
            }
            url += "/" + encoded
        }
        if !query.isEmpty {
            url += "?" + query.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&")
        }
        var retried = false
        while true {
            guard let token = await signer.current() else { throw failure(call, .signing, "cannot sign the JWT with \(credentials)") }
            var headers = [("Authorization", "Bearer " + token), ("Accept", "application/json")]
            if !body.isEmpty { headers.append(("Content-Type", "application/json")) }
            let request = HTTPFetchRequest(url: url, method: method, headers: headers, body: body, timeout: timeout)
            let (outcome, elapsed) = await fetcher.timedFetch(request)
            metrics.requestDuration(call, elapsed)
            let response: HTTPFetchResponse
            switch outcome {
            case .success(let answer): response = answer
            case .failure(.timeout): throw failure(call, .timeout, "no answer within \(timeout.wholeMilliseconds) ms")
            case .failure(.network(let message)): throw failure(call, .network, message)
            }
            switch response.status {
            case 200..<300:
                return response.body
            case 401 where !retried:
                // A key just rotated or a token Apple no longer takes: one new token, one more try.
                retried = true
                await signer.drop(token)
                logger.warning("the App Store Server API refused the JWT; retrying once with a new one",
                               metadata: ["call": .string(call.rawValue), "key_id": .string(credentials.keyId)])
            case 429:
                let seconds = Self.retryAfterSeconds(response.headers["retry-after"])
                throw failure(call, .rateLimited(retryAfterSeconds: seconds), "rate limited by Apple: retry after \(seconds) s")
            default:
                let payload = try? JSONDecoder().decode(AppStoreErrorPayload.self, from: Data(response.body))
                let code = payload?.errorCode.flatMap(AppStoreAPIErrorCode.init(rawValue:))
                let detail = payload?.errorCode.map { "errorCode \($0): \(Self.printable(payload?.errorMessage ?? ""))" } ?? "no error body"
                throw failure(call, .http(status: response.status, code: code), "HTTP \(response.status) (\(environment.rawValue)): \(detail)")
            }
        }
    }

    /// `Retry-After` in whole seconds (1 to an hour); an HTTP date or anything else gives the default.
    static func retryAfterSeconds(_ header: String?) -> Int {
        guard let header, let seconds = Int(header.trimmingCharacters(in: .whitespaces)), seconds > 0 else {
            return defaultRetryAfterSeconds
        }
        return min(seconds, 3600)
    }

    /// Apple's message, kept short and on one line (it goes into logs and errors).
    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.prefix(200).map { $0.properties.generalCategory == .control ? " " : Character($0) })
    }

    /// Every `AppStoreAPIError` is made here, so each is counted and logged exactly once.
    private func failure(_ call: AppStoreAPICall, _ kind: AppStoreAPIError.Kind, _ message: String) -> AppStoreAPIError {
        let error = AppStoreAPIError(call: call, kind: kind, message: message)
        metrics.error(error.call, kind: error.kindLabel)
        logger.warning("App Store Server API call failed", metadata: [
            "call": .string(call.rawValue), "kind": .string(error.kindLabel), "bundle_id": .string(credentials.bundleId),
            "transient": .stringConvertible(error.isTransient), "error": .string(message)])
        return error
    }
}
