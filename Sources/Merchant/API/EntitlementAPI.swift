import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Rejections
import ServiceHost
import Store
import Toolkit
import Verifiers

/// `GET /v1/users/{user}/entitlements?app=...[&environment=sandbox]`: the user's active entitlements in
/// one environment (production unless asked). A server credential asks for any user of its apps; a
/// client credential only for the user its user token names, and learns nothing of whether other users
/// exist (docs/security.md). Purchases are named by opaque ids, never by their purchase tokens or
/// transaction ids. `{user}` is percent-decoded, as `app` is.
public struct EntitlementAPI: Sendable {
    public static let path = "/v1/users/:user/entitlements"

    let store: EntitlementStore
    let credentials: APICredentials
    let purchaseIds: PurchaseIds
    let catalog: CatalogSettings
    let metrics: MerchantMetrics
    let logger: Logger
    /// What "active" is measured against.
    let now: @Sendable () -> Int64

    public init(store: EntitlementStore, credentials: APICredentials, purchaseIds: PurchaseIds, catalog: CatalogSettings,
         metrics: MerchantMetrics, logger: Logger, now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.store = store
        self.credentials = credentials
        self.purchaseIds = purchaseIds
        self.catalog = catalog
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    public init(store: EntitlementStore, tokens: [APIToken], catalog: CatalogSettings = CatalogSettings(), metrics: MerchantMetrics = MerchantMetrics(),
                logger: Logger, now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.init(store: store, credentials: APICredentials(tokens: tokens), purchaseIds: store.purchaseIds, catalog: catalog,
                  metrics: metrics, logger: logger, now: now)
    }

    /// Its one route, for the server that carries it (the workers' own, or the gateway's in `tollgate dev`).
    public var routes: RouteGroup {
        .merchant([.init(.get, Self.path) { request, context in try await respond(request, context) }],
                  credentials: CredentialMiddleware(credentials: credentials), refusals: .merchant(metrics))
    }

    struct Body: Encodable {
        /// One active product.
        struct Item: Encodable, Equatable {
            var product, source, purchaseId, state: String
            var expiresAt: String?
            var gracePeriodExpiresAt: String?

            var json: SortedJSON.Value {
                .object([("expiresAt", expiresAt.map(SortedJSON.Value.string)),
                         ("gracePeriodExpiresAt", gracePeriodExpiresAt.map(SortedJSON.Value.string)), ("product", .string(product)),
                         ("purchaseId", .string(purchaseId)), ("source", .string(source)), ("state", .string(state))])
            }
        }
        /// One active entitlement (access level) of the catalog, with the products granting it now.
        struct Access: Encodable, Equatable {
            var name: String
            var products: [String]
            /// The latest end among those products; absent when one of them does not end.
            var expiresAt: String?

            var json: SortedJSON.Value {
                .object([("expiresAt", expiresAt.map(SortedJSON.Value.string)), ("name", .string(name)), ("products", .strings(products))])
            }
        }
        var user: String
        var app: String
        var environment: String
        var access: [Access]
        var entitlements: [Item]

        /// The bytes `JSONEncoder` (sorted keys) writes for this body, written by hand (tests compare the two).
        var json: SortedJSON.Value {
            .object([("access", .array(access.map(\.json))), ("app", .string(app)), ("entitlements", .array(entitlements.map(\.json))),
                     ("environment", .string(environment)), ("user", .string(user))])
        }
    }

    func respond(_ request: Request, _ context: MerchantRequestContext) async throws(Rejection) -> Response {
        let caller = try context.caller()
        let (user, app, environment) = try Self.userQuery(request, user: context.parameters.get("user"))
        try credentials.authorize(caller, app: app, user: user)
        let found: [Entitlement]?
        do {
            found = try await store.entitlements(app: app, user: user, environment: environment.rawValue)
        } catch {
            logger.error("entitlement lookup failed", metadata: ["error": .string("\(error)")])
            throw Rejection(.storeUnavailable, "the entitlement store cannot answer now", retryAfterSeconds: 5)
        }
        // A client learns no more than its own user's entitlements: unknown and entitled to nothing answer alike.
        guard let found = found ?? (caller.isServer ? nil : []) else {
            throw Rejection(.unknownUser, "no purchase of this user in app \(app) (\(environment.rawValue))")
        }
        let body = Self.body(user: user, app: app, environment: environment.rawValue, found, nowMs: now(), ids: purchaseIds, catalog: catalog)
        return Self.json(.ok, SortedJSON.encode(body.json, reserving: 512))
    }

    /// The user of the path (percent-decoded, as the query's app arrives), the `app` and the
    /// `environment` (production unless asked: a sandbox purchase must never read as a paid one).
    static func userQuery(_ request: Request, user encodedUser: String?) throws(Rejection) -> (user: String, app: String, environment: NormalizedEvent.Environment) {
        guard let encodedUser, !encodedUser.isEmpty else { throw Rejection(.missingUser, "the path names no user") }
        // A control character (NUL above all) names nobody and would only reach the store to fail there.
        guard let user = encodedUser.removingPercentEncoding, !user.isEmpty,
              !user.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw Rejection(.malformedRequest, "the user in the path is not valid percent-encoded UTF-8 without control characters")
        }
        guard let app = request.uri.queryParameters.get("app"), !app.isEmpty else {
            throw Rejection(.missingApp, "the query parameter app is required")
        }
        guard let text = request.uri.queryParameters.get("environment") else { return (user, app, .production) }
        guard let environment = NormalizedEvent.Environment(rawValue: text) else {
            throw Rejection(.invalidEnvironment, "the query parameter environment must be production or sandbox")
        }
        return (user, app, environment)
    }

    /// What the API answers for these entitlements at `nowMs`: the active ones, and the catalog's
    /// access levels they grant.
    static func body(user: String, app: String, environment: String, _ entitlements: [Entitlement], nowMs: Int64, ids: PurchaseIds,
                     catalog: CatalogSettings) -> Body {
        let active = entitlements.filter { $0.isActive(atMs: nowMs) }
        return Body(user: user, app: app, environment: environment, access: access(active, catalog: catalog),
                    entitlements: active.map { item($0, ids: ids) })
    }

    static func item(_ e: Entitlement, ids: PurchaseIds) -> Body.Item {
        Body.Item(product: e.product, source: e.source, purchaseId: ids.id(of: e), state: e.state.rawValue,
                  expiresAt: e.expiresAtMs.map(EntitlementJSON.rfc3339),
                  gracePeriodExpiresAt: e.gracePeriodExpiresAtMs.map(EntitlementJSON.rfc3339))
    }

    /// The access levels the active entitlements grant, by name, each with its products and the latest end.
    static func access(_ active: [Entitlement], catalog: CatalogSettings) -> [Body.Access] {
        var byName: [String: (products: Set<String>, endMs: Int64?, endless: Bool)] = [:]
        for entitlement in active {
            let end = entitlement.gracePeriodExpiresAtMs.map { max($0, entitlement.expiresAtMs ?? $0) } ?? entitlement.expiresAtMs
            for name in catalog.entitlements(app: entitlement.app, source: entitlement.source, product: entitlement.product) {
                var held = byName[name] ?? ([], nil, false)
                held.products.insert(entitlement.product)
                if let end { held.endMs = max(held.endMs ?? end, end) } else { held.endless = true }
                byName[name] = held
            }
        }
        return byName.keys.sorted().compactMap { name in
            guard let held = byName[name] else { return nil }
            return Body.Access(name: name, products: held.products.sorted(), expiresAt: held.endless ? nil : held.endMs.map(EntitlementJSON.rfc3339))
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func json(_ status: HTTPResponse.Status, _ data: Data) -> Response {
        json(status, ByteBuffer(bytes: data))
    }

    static func json(_ status: HTTPResponse.Status, _ bytes: [UInt8]) -> Response {
        json(status, ByteBuffer(bytes: bytes))
    }

    private static func json(_ status: HTTPResponse.Status, _ buffer: ByteBuffer) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: buffer))
    }
}
