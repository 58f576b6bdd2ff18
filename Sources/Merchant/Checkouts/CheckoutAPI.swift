import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Rejections
import ServiceHost
import Toolkit
import Verifiers

/// `POST /v1/checkouts`, `GET /v1/checkouts` (a user's, by product), `GET /v1/checkouts/{id}` and `POST /v1/checkouts/{id}/refund`
/// (docs/checkouts.md, docs/openapi.yaml): credentials from `api.tokens` as every merchant API checks
/// them; a client credential starts and reads checkouts only for the user its user token names;
/// refunds are for server credentials configured `refunds: true`. A checkout names a catalog product
/// and a currency: its amount is the catalog's price, never the caller's. Every refusal is counted in
/// `tollgate_api_rejections_total{reason}`.
public struct CheckoutAPI: Sendable {
    public static let collectionPath = "/v1/checkouts"
    public static let itemPath = "/v1/checkouts/:id"
    public static let refundPath = "/v1/checkouts/:id/refund"
    static let maxBodyBytes = 16_384
    static let maxTextLength = 200
    /// The most checkouts one listing answers (the newest).
    static let maxListed = 100

    let service: CheckoutService
    let credentials: APICredentials
    let catalog: CatalogSettings
    let metrics: MerchantMetrics
    let logger: Logger

    public init(service: CheckoutService, credentials: APICredentials, catalog: CatalogSettings, metrics: MerchantMetrics, logger: Logger) {
        self.service = service
        self.credentials = credentials
        self.catalog = catalog
        self.metrics = metrics
        self.logger = logger
    }

    public var routes: RouteGroup {
        .merchant([
            .init(.post, Self.collectionPath) { request, context in try await create(request, context) },
            .init(.get, Self.collectionPath) { request, context in try await list(request, context) },
            .init(.get, Self.itemPath) { _, context in try await show(context) },
            .init(.post, Self.refundPath) { _, context in try await refund(context) },
        ], credentials: CredentialMiddleware(credentials: credentials), refusals: .merchant(metrics))
    }

    struct Body: Encodable {
        var id, app, user, product: String
        var amount: Int64
        var currency, provider, environment, state, reference: String
        var paymentUrl: String?
        var ipnUrl: String?
        var paymentId: String?
        var refundRequestId: String?
        var createdAt, expiresAt: String
    }

    func create(_ request: Request, _ context: MerchantRequestContext) async throws(Rejection) -> Response {
        let caller = try context.caller()
        let order = try Self.order(try await RequestBodyReader.read(request, maxBytes: Self.maxBodyBytes), providers: service.providers)
        // Before the catalog is read: a caller learns nothing of another app's products or prices.
        try credentials.authorize(caller, app: order.app, user: order.user)
        let started = try await service.startOrRepeat(try Self.intent(order, catalog: catalog))
        return Self.json(started.repeated ? .ok : .created, body(started.record))
    }

    /// `GET /v1/checkouts?app=&user=[&product=][&environment=][&state=]`: the user's checkouts, newest first (at
    /// most `maxListed`), for what a refund or a support question needs: the checkout's id. Authorized
    /// as starting one is: a client credential only for its user token's user.
    func list(_ request: Request, _ context: MerchantRequestContext) async throws(Rejection) -> Response {
        let caller = try context.caller()
        let query = request.uri.queryParameters
        func text(_ name: String) throws(Rejection) -> String? {
            guard let value = query.get(name) else { return nil }
            // One value each: which of two the authorization and the listing read must never differ.
            guard query.getAll(name).count == 1 else { throw Rejection(.invalidField, "\(name) is given more than once") }
            guard (1...Self.maxTextLength).contains(value.unicodeScalars.count),
                  !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw Rejection(.invalidField, "\(name) must be 1 to \(Self.maxTextLength) characters without control characters")
            }
            return value
        }
        guard let app = try text("app"), let user = try text("user") else {
            throw Rejection(.missingField, "the query parameters app and user are required")
        }
        let product = try text("product")
        var environment: NormalizedEvent.Environment?
        if let named = try text("environment") {
            guard let known = NormalizedEvent.Environment(rawValue: named) else {
                throw Rejection(.invalidField, "environment must be production or sandbox")
            }
            environment = known
        }
        var state: CheckoutRecord.State?
        if let named = try text("state") {
            guard let known = CheckoutRecord.State(rawValue: named) else {
                throw Rejection(.invalidField, "state must be pending, paid, refunded or expired")
            }
            state = known
        }
        try credentials.authorize(caller, app: app, user: user)
        let found: [CheckoutRecord]
        do {
            found = try await service.records.list(app: app, user: user, product: product, environment: environment, state: state,
                                                   limit: Self.maxListed)
        } catch {
            logger.error("checkout listing failed", metadata: ["error": .string("\(error)")])
            throw Rejection(.storeUnavailable, "the checkout store cannot answer now", retryAfterSeconds: 5)
        }
        struct Listing: Encodable { var checkouts: [Body] }
        return Self.json(.ok, Listing(checkouts: found.map(body)))
    }

    func show(_ context: MerchantRequestContext) async throws(Rejection) -> Response {
        Self.json(.ok, body(try await lookUp(context).checkout))
    }

    /// Asks the checkout's provider to refund a paid checkout in full: 202 with the checkout (still
    /// `paid`, with its `refundRequestId`) until the provider's notification makes it `refunded`; 200
    /// when it already is. The body, if any, is not read.
    func refund(_ context: MerchantRequestContext) async throws(Rejection) -> Response {
        let (checkout, caller) = try await lookUp(context)
        guard caller.isServer && caller.credential.refunds else {
            throw Rejection(.refundNotAllowed, "this token may not ask for refunds (api.tokens: refunds: true)")
        }
        let requested = try await service.refund(checkout)
        let current = (try? await service.records.find(id: checkout.id)) ?? checkout
        return Self.json(requested ? .accepted : .ok, body(current))
    }

    /// The checkout the path's `id` names, for this request's caller: another app's checkout, or for a
    /// client credential another user's, reads as unknown, so a caller learns nothing of checkouts not its own.
    private func lookUp(_ context: MerchantRequestContext) async throws(Rejection) -> (checkout: CheckoutRecord, caller: Caller) {
        let caller = try context.caller()
        let unknown = Rejection(.checkoutNotFound, "no checkout has this id")
        guard let id = context.parameters.get("id"), !id.isEmpty, id.utf8.count <= 64 else { throw unknown }
        let found: CheckoutRecord?
        do { found = try await service.records.find(id: id) } catch {
            logger.error("checkout lookup failed", metadata: ["error": .string("\(error)")])
            throw Rejection(.storeUnavailable, "the checkout store cannot answer now", retryAfterSeconds: 5)
        }
        guard let found, caller.credential.allows(app: found.app) else { throw unknown }
        // Whatever keeps a client from this checkout (no user token, another user's, a bad one) reads as
        // an unknown id, so the answer says nothing of whether the id exists.
        do { try credentials.authorize(caller, app: found.app, user: found.user) } catch { throw unknown }
        return (found, caller)
    }

    /// A checkout's body as sent, before the catalog prices it.
    struct Order {
        var app, user, product, currency, provider: String
        var amount: JSONValue?
    }

    /// `{app, user, product, currency, provider[, amount]}`: texts of 1 to 200 characters without control
    /// characters, currency three upper-case letters, provider one of the catalog's (`CheckoutProviderCatalog`).
    /// `intent` prices it: the amount is the catalog's price of `product` in `currency` for `app`; an
    /// `amount` sent must equal it (an app that showed an old price learns so). Other members are ignored.
    static func order(_ bytes: [UInt8], providers: CheckoutProviders) throws(Rejection) -> Order {
        guard let object = JSONValue.parse(bytes)?.object else { throw Rejection(.malformedJSON, "the body is not a JSON object") }
        func text(_ name: String) throws(Rejection) -> String {
            guard let value = object[name], value != .null else { throw Rejection(.missingField, "\(name) is required") }
            guard let text = value.string, (1...maxTextLength).contains(text.unicodeScalars.count),
                  !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw Rejection(.invalidField, "\(name) must be a string of 1 to \(maxTextLength) characters without control characters")
            }
            return text
        }
        let app = try text("app"), user = try text("user"), product = try text("product")
        let currency = try text("currency")
        guard currency.utf8.count == 3, currency.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            throw Rejection(.invalidField, "currency must be an ISO 4217 code in upper case (USD)")
        }
        let provider = try text("provider")
        guard providers[provider] != nil else {
            throw Rejection(.invalidField, "provider must be \(providers.namesText)")
        }
        return Order(app: app, user: user, product: product, currency: currency, provider: provider, amount: object["amount"])
    }

    /// The order priced by the catalog.
    static func intent(_ order: Order, catalog: CatalogSettings) throws(Rejection) -> CheckoutIntent {
        let (app, product, currency) = (order.app, order.product, order.currency)
        guard let priced = catalog.product(app: app, id: product) else {
            throw Rejection(.unknownProduct, "the catalog has no product \(product) for \(app) (catalog.apps[].products)")
        }
        guard let amount = priced.pricesMinor[currency] else {
            throw Rejection(.currencyNotOffered, "the catalog gives \(product) no price in \(currency)")
        }
        if let sent = order.amount, sent != .null {
            // JSON Schema's integer is any number without a fraction, `1999.0` and `2e3` included.
            guard case .number(let number) = sent, let value = Double(number.text), value.rounded() == value else {
                throw Rejection(.invalidField, "amount must be a whole number of minor units")
            }
            guard value == Double(amount) else {
                throw Rejection(.priceMismatch, "\(product) costs \(amount) \(currency) minor units in the catalog, not the amount sent")
            }
        }
        return CheckoutIntent(app: app, user: order.user, product: product, amountMinor: amount, currency: currency,
                              provider: SourceName(order.provider))
    }

    func body(_ c: CheckoutRecord) -> Body {
        Body(id: c.id, app: c.app, user: c.user, product: c.product, amount: c.amountMinor, currency: c.currency,
             provider: c.provider.rawValue, environment: c.environment.rawValue, state: c.state.rawValue, reference: c.reference,
             paymentUrl: c.paymentURL, ipnUrl: service.appPlacesOrder(c) ? c.notifyURL : nil, paymentId: c.paymentId,
             refundRequestId: c.state == .paid ? c.refundRequestId : nil,
             createdAt: EntitlementJSON.rfc3339(c.createdAtMs), expiresAt: EntitlementJSON.rfc3339(c.expiresAtMs))
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func json(_ status: HTTPResponse.Status, _ body: some Encodable) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        let data = (try? encoder.encode(body)) ?? Data()
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
