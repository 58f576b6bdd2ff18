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

/// `POST /v1/purchases`: an app (or its backend) reports a purchase with its user; the store verifies
/// it, and the answer is the user's entitlements once the workers applied it (docs/purchases.md).
public struct PurchasesAPI: Sendable {
    public static let path = "/v1/purchases"

    /// A receipt is the largest claim: the body may hold one of `purchases.maxReceiptBytes`, with room for
    /// the JSON around it and its `/` written `\/` (about one character in 64 of base64).
    static func maxBodyBytes(receiptBytes: Int) -> Int { receiptBytes + receiptBytes / 16 + 4_096 }

    let service: PurchaseService
    let credentials: APICredentials
    let purchaseIds: PurchaseIds
    let catalog: CatalogSettings
    let metrics: MerchantMetrics
    let logger: Logger

    public init(service: PurchaseService, credentials: APICredentials, purchaseIds: PurchaseIds, catalog: CatalogSettings,
         metrics: MerchantMetrics, logger: Logger) {
        self.service = service
        self.credentials = credentials
        self.purchaseIds = purchaseIds
        self.catalog = catalog
        self.metrics = metrics
        self.logger = logger
    }

    public var routes: RouteGroup {
        .merchant([.init(.post, Self.path) { request, context in try await respond(request, context) }],
                  credentials: CredentialMiddleware(credentials: credentials),
                  // The reason and its message only: never the claim, which may carry a token.
                  refusals: .merchant(metrics, logger: logger, route: Self.path))
    }

    /// A parsed request: who reports what for which app.
    struct Report: Equatable {
        var app: String
        var user: String
        var claim: PurchaseClaim
    }

    func respond(_ request: Request, _ context: MerchantRequestContext) async throws(Rejection) -> Response {
        let caller = try context.caller()
        let body = try await RequestBodyReader.read(request, maxBytes: Self.maxBodyBytes(receiptBytes: service.settings.maxReceiptBytes))
        let report = try Self.parse(body, maxReceiptBytes: service.settings.maxReceiptBytes)
        try credentials.authorize(caller, app: report.app, user: report.user)
        // A client credential is public: a bare transaction id proves nothing of who bought it.
        if !caller.isServer, !report.claim.provesPossession {
            throw Rejection(.proofRequired, "a client credential reports Apple purchases with signedTransaction or receipt, not transactionId")
        }
        if report.claim.callsStore { try credentials.takeStoreCall(caller) }
        return try await answer(report)
    }

    func answer(_ report: Report) async throws(Rejection) -> Response {
        let outcome = try await service.report(report.claim, app: report.app, user: report.user)
        let environment = outcome.purchases[0].environment
        let ids = purchaseIds
        var answer = Answer(user: report.user, app: report.app, environment: environment.rawValue,
                            purchases: outcome.purchases.map { Answer.Item($0, ids: ids) }, eventIds: outcome.eventIds)
        guard outcome.applied else { return Self.json(.accepted, answer) }
        do {
            let found = try await service.store.entitlements(app: report.app, user: report.user, environment: environment.rawValue) ?? []
            let body = EntitlementAPI.body(user: report.user, app: report.app, environment: environment.rawValue, found,
                                           nowMs: service.now().millisecondsSince1970, ids: ids, catalog: catalog)
            answer.entitlements = body.entitlements
            answer.access = body.access
        } catch {
            // Applied, but the answer cannot be read: the app asks the entitlement API later.
            return Self.json(.accepted, answer)
        }
        return Self.json(.ok, answer)
    }

    struct Answer: Encodable {
        /// One purchase the claim proved, by its opaque id: never its purchase token or transaction id.
        struct Item: Encodable {
            var store, purchaseId, product, kind, type: String
            var expiresAt: String?

            init(_ purchase: VerifiedPurchase, ids: PurchaseIds) {
                store = purchase.source.rawValue
                purchaseId = ids.id(of: purchase)
                product = purchase.product
                kind = purchase.kind.rawValue
                type = purchase.type.rawValue
                expiresAt = purchase.transaction?.expiresAt
            }

            init(store: String, purchaseId: String, product: String, kind: String, type: String, expiresAt: String?) {
                (self.store, self.purchaseId, self.product, self.kind, self.type, self.expiresAt) = (store, purchaseId, product, kind, type, expiresAt)
            }

            var json: SortedJSON.Value {
                .object([("expiresAt", expiresAt.map(SortedJSON.Value.string)), ("kind", .string(kind)), ("product", .string(product)),
                         ("purchaseId", .string(purchaseId)), ("store", .string(store)), ("type", .string(type))])
            }
        }
        var user, app, environment: String
        var purchases: [Item]
        var eventIds: [String]
        /// Present once applied (200); absent with 202.
        var access: [EntitlementAPI.Body.Access]?
        var entitlements: [EntitlementAPI.Body.Item]?

        /// The bytes `JSONEncoder` (sorted keys) writes for this answer, written by hand: it was 3.5% of
        /// the route's CPU through `JSONEncoder` (tests compare the two).
        var json: SortedJSON.Value {
            .object([("access", access.map { .array($0.map(\.json)) }), ("app", .string(app)),
                     ("entitlements", entitlements.map { .array($0.map(\.json)) }), ("environment", .string(environment)),
                     ("eventIds", .strings(eventIds)), ("purchases", .array(purchases.map(\.json))), ("user", .string(user))])
        }
    }

    /// The body: `{app, user, apple: {signedTransaction | transactionId | receipt}}` or
    /// `{app, user, google: {packageName, productId, purchaseToken}}`, nothing else. A receipt longer
    /// than `maxReceiptBytes` is refused as too large.
    static func parse(_ body: [UInt8], maxReceiptBytes: Int) throws(Rejection) -> Report {
        guard let json = JSONValue.parse(body), let object = json.object else { throw Rejection(.malformedJSON, "the body is not a JSON object") }
        try onlyKeys(object, ["app", "user", "apple", "google"], in: "the body")
        let app = try text(object, "app", max: 256, in: "")
        let user = try text(object, "user", max: 256, in: "")
        guard !user.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw Rejection(.invalidField, "user contains a control character")
        }
        switch (object["apple"], object["google"]) {
        case (let apple?, nil):
            guard let fields = apple.object else { throw Rejection(.invalidField, "apple is not an object") }
            try onlyKeys(fields, ["signedTransaction", "transactionId", "receipt"], in: "apple")
            guard fields.count == 1, let (name, _) = fields.first else {
                throw Rejection(.invalidField, "apple holds exactly one of signedTransaction, transactionId, receipt")
            }
            switch name {
            case "signedTransaction":
                return Report(app: app, user: user, claim: .appleSignedTransaction(try text(fields, name, max: 65_536, in: "apple.")))
            case "transactionId":
                let id = try text(fields, name, max: 64, in: "apple.")
                guard id.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                    throw Rejection(.invalidField, "apple.transactionId is not a number")
                }
                return Report(app: app, user: user, claim: .appleTransactionId(id, bundleId: app))
            default:
                try checkReceiptSize(fields[name], "apple.receipt", maxBytes: maxReceiptBytes)
                return Report(app: app, user: user, claim: .appleReceipt(try text(fields, name, max: maxReceiptBytes, in: "apple."), bundleId: app))
            }
        case (nil, let google?):
            guard let fields = google.object else { throw Rejection(.invalidField, "google is not an object") }
            try onlyKeys(fields, ["packageName", "productId", "purchaseToken"], in: "google")
            let packageName = try text(fields, "packageName", max: 256, in: "google.")
            guard packageName == app else { throw Rejection(.purchaseNotFound, "google.packageName is another app than app") }
            return Report(app: app, user: user, claim: .google(packageName: packageName, productId: try text(fields, "productId", max: 256, in: "google."),
                                                               purchaseToken: try text(fields, "purchaseToken", max: 4_096, in: "google.")))
        case (nil, nil):
            throw Rejection(.missingField, "the body holds neither apple nor google")
        default:
            throw Rejection(.invalidField, "the body holds both apple and google")
        }
    }

    /// A receipt's size is checked before anything else reads it: past `purchases.maxReceiptBytes`
    /// (bytes of base64) it is 413, as a body past its limit is.
    static func checkReceiptSize(_ value: JSONValue?, _ name: String, maxBytes: Int) throws(Rejection) {
        guard let text = value?.string, text.utf8.count > maxBytes else { return }
        throw Rejection(.bodyTooLarge, "\(name) is longer than \(maxBytes) bytes (purchases.maxReceiptBytes)")
    }

    private static func onlyKeys(_ object: [String: JSONValue], _ allowed: Set<String>, in place: String) throws(Rejection) {
        if let extra = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw Rejection(.invalidField, "\(place) has an unknown field \(String(extra.prefix(64)))")
        }
    }

    private static func text(_ object: [String: JSONValue], _ key: String, max: Int, in prefix: String) throws(Rejection) -> String {
        guard let value = object[key] else { throw Rejection(.missingField, "\(prefix)\(key) is missing") }
        guard let text = value.string else { throw Rejection(.invalidField, "\(prefix)\(key) is not a string") }
        // Counted as JSON Schema counts (code points), so docs/openapi.yaml's maxLength states it.
        guard !text.isEmpty, text.unicodeScalars.count <= max else { throw Rejection(.invalidField, "\(prefix)\(key) must be 1 to \(max) characters") }
        return text
    }

    static func json(_ status: HTTPResponse.Status, _ answer: Answer) -> Response {
        EntitlementAPI.json(status, SortedJSON.encode(answer.json, reserving: 768))
    }

    static func json(_ status: HTTPResponse.Status, _ answer: some Encodable) -> Response {
        EntitlementAPI.json(status, (try? EntitlementAPI.encoder.encode(answer)) ?? Data())
    }
}
