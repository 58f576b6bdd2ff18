import Foundation
import Logging
import Metrics
import Toolkit

/// The Google Play Developer API as the entitlement workers use it: a purchase looked up by its
/// token, because RTDN events carry no purchase state.
///
/// Authenticates as a service account. Copies share one access token, kept until a minute before
/// it expires and fetched once for all concurrent callers; a 401 from the API drops it and retries
/// the call once with a new one.
public struct PlayAPIClient: Sendable {
    private let baseURL: String
    private let transport: PlayTransport
    private let tokens: AccessTokenProvider

    /// - Parameters:
    ///   - timeout: the deadline of each HTTP request (token or API).
    ///   - now: the wall clock, for the JWT's `iat`/`exp` and the token's expiry.
    public init(key: ServiceAccountKey, baseURL: String = "https://androidpublisher.googleapis.com",
                tokenURL: String = "https://oauth2.googleapis.com/token", fetcher: any HTTPFetcher,
                timeout: Duration = .seconds(10), logger: Logger, metricsFactory: any MetricsFactory = MetricsSystem.factory,
                now: @escaping @Sendable () -> Date = { Date() }) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        transport = PlayTransport(fetcher: fetcher, timeout: timeout, logger: logger, metrics: PlayAPIMetrics(factory: metricsFactory))
        tokens = AccessTokenProvider(key: key, tokenURL: tokenURL, transport: transport, now: now)
    }

    /// `purchases.subscriptionsv2.get`. Nil when Google answers 410: the subscription ended long
    /// ago and its purchase is no longer kept.
    public func subscription(packageName: String, token: String) async throws(PlayAPIError) -> SubscriptionPurchaseV2? {
        let url = try url(.subscription, "applications", packageName, "purchases", "subscriptionsv2", "tokens", token)
        return try await get(.subscription, url: url)
    }

    /// `purchases.productsv2.getproductpurchasev2`, for a one-time purchase: its line items with their
    /// purchase options, offers and quantities. Nil when Google answers 410.
    public func product(packageName: String, token: String) async throws(PlayAPIError) -> ProductPurchaseV2? {
        let url = try url(.product, "applications", packageName, "purchases", "productsv2", "tokens", token)
        return try await get(.product, url: url)
    }

    /// `monetization.onetimeproducts.get`: the product's purchase options, for a rental's period. Nil on 410.
    public func oneTimeProduct(packageName: String, productId: String) async throws(PlayAPIError) -> OneTimeProduct? {
        let url = try url(.oneTimeProduct, "applications", packageName, "oneTimeProducts", productId)
        return try await get(.oneTimeProduct, url: url)
    }

    /// `orders.get`: the order's purchase token and what it paid for. Nil on 410.
    public func order(packageName: String, orderId: String) async throws(PlayAPIError) -> Order? {
        let url = try url(.order, "applications", packageName, "orders", orderId)
        return try await get(.order, url: url)
    }

    /// `orders.reviewrefund`: the developer's view of a chargeback under review. Google records the first
    /// answer to a notification and answers later ones 200 too (empty body).
    public func reviewRefund(packageName: String, orderId: String, _ answer: RefundReviewAnswer) async throws(PlayAPIError) {
        let url = try url(.reviewRefund, "applications", packageName, "orders", orderId) + ":reviewrefund"
        let body: [UInt8]
        do { body = Array(try JSONEncoder().encode(answer)) } catch {
            throw transport.failure(.reviewRefund, .decode, "the answer could not be written")
        }
        _ = try await send(.reviewRefund, url: url, method: "POST", body: body)
    }

    /// `purchases.voidedpurchases.list`, one page: the package's purchases voided since `startTimeMillis`
    /// (Google keeps 30 days), subscriptions and quantity-based partial refunds included.
    public func voidedPurchases(packageName: String, startTimeMillis: Int64, pageToken: String? = nil) async throws(PlayAPIError) -> VoidedPurchasesPage {
        var url = try url(.voidedPurchases, "applications", packageName, "purchases", "voidedpurchases")
        url += "?startTime=\(startTimeMillis)&type=1&includeQuantityBasedPartialRefund=true&maxResults=1000"
        if let pageToken { url += "&token=" + PercentEncoding.encode(pageToken) }
        let page: VoidedPurchasesPage? = try await get(.voidedPurchases, url: url)
        return page ?? VoidedPurchasesPage(voidedPurchases: nil, tokenPagination: nil)
    }

    /// `purchases.subscriptions.acknowledge`: tells Google the subscription purchase was granted, so it
    /// is not refunded three days after the purchase. Google answers 200 with an empty body; a purchase
    /// already acknowledged answers 200 too. False when Google no longer keeps the purchase (410).
    public func acknowledgeSubscription(packageName: String, subscriptionId: String, token: String) async throws(PlayAPIError) -> Bool {
        let url = try url(.acknowledgeSubscription, "applications", packageName, "purchases", "subscriptions", subscriptionId,
                          "tokens", token) + ":acknowledge"
        return try await send(.acknowledgeSubscription, url: url, method: "POST", body: Array("{}".utf8)) != nil
    }

    /// `purchases.products.acknowledge`, for a one-time product: the same promise as for subscriptions.
    public func acknowledgeProduct(packageName: String, productId: String, token: String) async throws(PlayAPIError) -> Bool {
        let url = try url(.acknowledgeProduct, "applications", packageName, "purchases", "products", productId, "tokens", token)
            + ":acknowledge"
        return try await send(.acknowledgeProduct, url: url, method: "POST", body: Array("{}".utf8)) != nil
    }

    /// Whether Google lists `token` among the package's purchases voided since `startTimeMillis`,
    /// reading at most `maxPages` pages of 1,000.
    public func isVoided(packageName: String, token: String, orderId: String? = nil, startTimeMillis: Int64,
                         maxPages: Int = 20) async throws(PlayAPIError) -> Bool {
        var pageToken: String?
        for _ in 0..<maxPages {
            let page = try await voidedPurchases(packageName: packageName, startTimeMillis: startTimeMillis, pageToken: pageToken)
            // A subscription's token stays the same across its renewals: with the notification's order
            // id, only the void of that order counts (a void of an old renewal does not end the current one).
            if page.voidedPurchases?.contains(where: { $0.purchaseToken == token && (orderId == nil || $0.orderId == orderId) }) == true {
                return true
            }
            guard let next = page.tokenPagination?.nextPageToken, !next.isEmpty else { return false }
            pageToken = next
        }
        return false
    }

    private func url(_ call: PlayAPICall, _ segments: String...) throws(PlayAPIError) -> String {
        var url = baseURL + "/androidpublisher/v3"
        for segment in segments {
            guard let encoded = PercentEncoding.pathSegment(segment) else {
                throw transport.failure(call, .invalidArgument, "a package name, product id or token is empty, \".\" or \"..\"")
            }
            url += "/" + encoded
        }
        return url
    }

    private func get<Model: Decodable>(_ call: PlayAPICall, url: String) async throws(PlayAPIError) -> Model? {
        guard let response = try await send(call, url: url) else { return nil }
        do {
            return try JSONDecoder().decode(Model.self, from: Data(response.body))
        } catch {
            throw transport.failure(call, .decode, "the answer is not a \(Model.self): \(Self.describe(error))")
        }
    }

    /// One call with the service account's token: the 2xx answer, nil for 410 (gone). A 401 drops the
    /// token and tries once more with a new one; a second 401 is an error.
    private func send(_ call: PlayAPICall, url: String, method: String = "GET", body: [UInt8] = []) async throws(PlayAPIError) -> HTTPFetchResponse? {
        var retried = false
        while true {
            let bearer = try await tokens.current()
            var headers = [("Authorization", "Bearer " + bearer.value), ("Accept", "application/json")]
            if method != "GET" { headers.append(("Content-Type", "application/json")) }
            let request = HTTPFetchRequest(url: url, method: method, headers: headers, body: body, timeout: transport.timeout)
            let response = try await transport.exchange(call, request)
            switch response.status {
            case 200..<300:
                return response
            case 410:
                transport.logger.debug("the purchase is gone (410)", metadata: ["call": .string(call.rawValue)])
                return nil
            case 401 where !retried:
                // Revoked or expired early: one new token, one more try; a second 401 is an error.
                retried = true
                await tokens.drop(bearer)
                transport.logger.warning("the Play API refused the access token; retrying once with a new one",
                                      metadata: ["call": .string(call.rawValue)])
            default:
                throw transport.failure(call, .http(status: response.status),
                                        "HTTP \(response.status): \(GoogleErrorBody.summary(response.body))",
                                        retryAfterSeconds: response.status == 429 ? Self.retryAfterSeconds(response.headers["retry-after"]) : nil)
            }
        }
    }

    /// `Retry-After` in whole seconds (1 to an hour); nil for an HTTP date or anything else.
    static func retryAfterSeconds(_ header: String?) -> Int? {
        guard let header, let seconds = Int(header.trimmingCharacters(in: .whitespaces)), seconds > 0 else { return nil }
        return min(seconds, 3600)
    }

    /// Where and why decoding failed, without the decoder's underlying error (it may quote the body).
    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "undecodable" }
        let context: DecodingError.Context
        switch error {
        case .dataCorrupted(let c), .keyNotFound(_, let c), .typeMismatch(_, let c), .valueNotFound(_, let c): context = c
        @unknown default: return "undecodable"
        }
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
    }
}
