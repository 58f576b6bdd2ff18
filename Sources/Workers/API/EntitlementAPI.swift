import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Senders
import ServiceHost
import Store
import Toolkit

/// `GET /v1/users/{user}/entitlements?app=...[&environment=sandbox]`: the user's active entitlements in
/// one environment (production unless asked), for the merchant's own services. Bearer tokens from
/// `api.tokens`, compared in constant time; none configured refuses all; a token limited to apps
/// answers only for those. `{user}` is percent-decoded, as `app` is.
public struct EntitlementAPI: Sendable {
    public static let path = "/v1/users/:user/entitlements"

    let store: EntitlementStore
    let tokens: [APIToken]
    let metrics: WorkerMetrics
    let logger: Logger

    public init(store: EntitlementStore, tokens: [APIToken], metrics: WorkerMetrics = WorkerMetrics(), logger: Logger) {
        self.store = store
        self.tokens = tokens
        self.metrics = metrics
        self.logger = logger
    }

    /// Its one route, for the server that carries it (the workers' own, or the gateway's in `tollgate dev`).
    public var routes: RouteGroup {
        RouteGroup(methods: [Self.path: [.get]]) { router in
            router.get(RouterPath(Self.path)) { request, context in
                await respond(request, user: context.parameters.get("user"))
            }
        }
    }

    struct Body: Encodable {
        struct Item: Encodable {
            var product, source, subject, state: String
            var expiresAt: String?
            var gracePeriodExpiresAt: String?
        }
        var user: String
        var app: String
        var environment: String
        var entitlements: [Item]
    }

    func respond(_ request: Request, user: String?, nowMs: Int64 = Timestamp.now.millisecondsSince1970) async -> Response {
        guard let token = BearerTokens(tokens: tokens).match(request) else {
            return refuse(.unauthorized, "a valid bearer token from api.tokens is required", headers: BearerTokens.challenge)
        }
        // The router hands the path segment over still percent-encoded; the query's app arrives decoded.
        guard let encodedUser = user, !encodedUser.isEmpty else { return refuse(.missingUser, "the path names no user") }
        // A control character (NUL above all) names nobody and would only reach the store to fail there.
        guard let user = encodedUser.removingPercentEncoding, !user.isEmpty,
              !user.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return refuse(.malformedRequest, "the user in the path is not valid percent-encoded UTF-8 without control characters")
        }
        guard let app = request.uri.queryParameters.get("app"), !app.isEmpty else {
            return refuse(.missingApp, "the query parameter app is required")
        }
        // Production unless asked: a sandbox purchase must never read as a paid one.
        let environment: NormalizedEvent.Environment
        switch request.uri.queryParameters.get("environment") {
        case nil: environment = .production
        case let text?:
            guard let parsed = NormalizedEvent.Environment(rawValue: text) else {
                return refuse(.invalidEnvironment, "the query parameter environment must be production or sandbox")
            }
            environment = parsed
        }
        guard token.allows(app: app) else {
            return refuse(.appNotAllowed, "this token is limited to other apps (api.tokens)")
        }
        let found: [Entitlement]?
        do { found = try await store.entitlements(app: app, user: user, environment: environment.rawValue) } catch {
            logger.error("entitlement lookup failed", metadata: ["error": .string("\(error)")])
            var headers = HTTPFields()
            headers[.retryAfter] = "5"
            return refuse(.storeUnavailable, "the entitlement store cannot answer now", headers: headers)
        }
        guard let found else {
            return refuse(.unknownUser, "no purchase of this user in app \(app) (\(environment.rawValue))")
        }
        let items = Self.activeItems(found, nowMs: nowMs)
        let data = (try? Self.encoder.encode(Body(user: user, app: app, environment: environment.rawValue, entitlements: items))) ?? Data()
        return Self.json(.ok, data)
    }

    /// The entitlements that are active at `nowMs`, as the API lists them.
    static func activeItems(_ entitlements: [Entitlement], nowMs: Int64) -> [Body.Item] {
        entitlements.filter { $0.isActive(atMs: nowMs) }.map {
            Body.Item(product: $0.product, source: $0.source, subject: $0.subject, state: $0.state.rawValue,
                      expiresAt: $0.expiresAtMs.map(EntitlementJSON.rfc3339),
                      gracePeriodExpiresAt: $0.gracePeriodExpiresAtMs.map(EntitlementJSON.rfc3339))
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// A refusal, counted by reason.
    func refuse(_ reason: RejectionReason, _ message: String, headers: HTTPFields = [:]) -> Response {
        metrics.apiRejected(reason: reason.rawValue)
        return Self.error(reason, message, headers: headers)
    }

    static func error(_ reason: RejectionReason, _ message: String, headers: HTTPFields = [:]) -> Response {
        Rejection(reason, message).response(extraHeaders: headers)
    }

    static func json(_ status: HTTPResponse.Status, _ data: Data) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
