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

/// `POST /v1/validate`: Iaptic's Validate API on the purchases machinery, so an app using
/// cordova-plugin-purchase points its validator URL at Tollgate (docs/purchases.md). The request and
/// answer keep Iaptic's shapes and codes; the key is the app's `purchases.validatorKeys` entry, carried
/// in the validator URL (`?appName=<app>&apiKey=<key>`) since that URL is all such a client knows, or an
/// `api.tokens` bearer token with `appName` in the URL. A validator key is a client credential of its
/// app: every claim it accepts proves possession (a signed transaction, a receipt whose signature
/// chains to Apple, a Play purchase token), and a `Tollgate-User-Token`, when sent, must name the
/// `applicationUsername`.
public struct ValidateAPI: Sendable {
    public static let path = "/v1/validate"

    let service: PurchaseService
    let purchaseIds: PurchaseIds
    let credentials: APICredentials
    /// The validator keys, each a client credential of its app.
    let validatorKeys: APICredentials
    let metrics: MerchantMetrics
    let logger: Logger

    public init(service: PurchaseService, purchaseIds: PurchaseIds, credentials: APICredentials, keys: [String: String], metrics: MerchantMetrics,
         logger: Logger) {
        self.service = service
        self.purchaseIds = purchaseIds
        self.credentials = credentials
        validatorKeys = APICredentials(tokens: keys.sorted { $0.key < $1.key }.map { APIToken($0.value, kind: .client, apps: [$0.key]) },
                                       userTokenKeys: credentials.userTokenKeys, ratePerSecond: credentials.ratePerSecond,
                                       rateBurst: credentials.rateBurst, clientStoreCallsPerSecond: credentials.clientStoreCallsPerSecond,
                                       clientStoreCallBurst: credentials.clientStoreCallBurst, now: credentials.now)
        self.metrics = metrics
        self.logger = logger
    }

    public var routes: RouteGroup {
        .merchant([.init(.post, Self.path) { request, context in try await respond(request, context) }],
                  credentials: CredentialMiddleware(
                      credentials: credentials, urlKeys: validatorKeys,
                      unauthorized: Rejection(.unauthorized, "the validator URL's apiKey (purchases.validatorKeys) or an api.tokens bearer token is required",
                                              challenge: APICredentials.unauthorized.challenge)),
                  // The reason and its message only: never the claim, which may carry a token.
                  refusals: .merchant(metrics, logger: logger, route: Self.path, render: Self.failure))
    }

    /// Iaptic's error codes.
    enum Code: Int {
        case invalidPayload = 6778001, connectionFailed = 6778002, subscriptionExpired = 6778003, purchaseConsumed = 6778004
        case internalError = 6778005, needMoreData = 6778006, unknown = 6778007

        init(_ reason: any ReasonCode) {
            switch reason {
            case PurchaseReason.storeAPIUnavailable: self = .connectionFailed
            case EntitlementReason.storeUnavailable, CommonReason.notDurable: self = .internalError
            case CredentialReason.unauthorized, CredentialReason.appNotAllowed, CommonReason.rateLimited, CredentialReason.userTokenRequired,
                 CredentialReason.invalidUserToken, CredentialReason.userTokenExpired, CredentialReason.userNotAllowed: self = .unknown
            default: self = .invalidPayload
            }
        }
    }

    struct Request: Equatable {
        var app: String
        var user: String?
        /// The product asked about: the request's `id`, unless it names the application (`type`
        /// `application`, Apple's whole receipt); for `apple-sk2`, the transaction's `id` (its product).
        var product: String?
        var claim: PurchaseClaim
        /// The answer's `data.id`: the request's `id` when it sends one, else the app.
        var answerId: String
        /// `transaction.type` as sent: the answer's `data.transaction.type`.
        var transactionType: String
    }

    func respond(_ request: Hummingbird.Request, _ context: MerchantRequestContext) async throws(Rejection) -> Response {
        let caller = try context.caller()
        guard let app = request.uri.queryParameters.get("appName"), !app.isEmpty else {
            throw Rejection(.missingApp, "the validator URL names no appName")
        }
        let viaValidatorKey = caller.presented == .urlKey
        let body = try await RequestBodyReader.read(request, maxBytes: PurchasesAPI.maxBodyBytes(receiptBytes: service.settings.maxReceiptBytes))
        let parsed = try Self.parse(body, app: app, maxReceiptBytes: service.settings.maxReceiptBytes)
        // Every claim this route takes proves possession, so the validator key (all such a client can be
        // configured with) links it to applicationUsername; an api.tokens client credential acts, as
        // everywhere, only for its user token's user.
        try credentials.authorize(caller, app: app, user: parsed.user, userTokenOptional: viaValidatorKey)
        // A claim anyone may copy (a shared receipt) must not unlock every install that sends it: from the
        // app, a purchase is answered only for the user it is linked to, under the app's ownership policy.
        guard caller.isServer || parsed.user != nil else {
            throw Rejection(.missingUser, "additionalData.applicationUsername is required: a purchase is validated for the user it belongs to")
        }
        if parsed.claim.callsStore { try (viaValidatorKey ? validatorKeys : credentials).takeStoreCall(caller) }
        let purchases: [VerifiedPurchase]
        if let user = parsed.user {
            purchases = try await service.report(parsed.claim, app: app, user: user).purchases
        } else {
            purchases = try await service.verify(parsed.claim, app: app)
        }
        let nowMs = service.now().millisecondsSince1970
        let ids = purchaseIds
        let collection = purchases.map { Self.item($0, nowMs: nowMs, ids: ids) }
        let data = Answer.Data(id: parsed.answerId, collection: collection,
                               ineligible_for_intro_price: Array(Set(purchases.filter { $0.kind == .subscription }.map(\.product))).sorted(),
                               transaction: NativeTransaction(parsed.transactionType, purchases: purchases, product: parsed.product) { ids.id(of: $0) })
        if let product = parsed.product {
            // The purchase does not hold the product asked about: the seed's "not owned", with what it holds.
            guard collection.contains(where: { $0.id == product }) else {
                return PurchasesAPI.json(.ok, Failure(code: Code.invalidPayload.rawValue, message: "the purchase does not hold \(product): not owned",
                                                      error: nil, data: data))
            }
            // The product asked about is an expired subscription: Iaptic's "not owned" answer, with the data.
            if !collection.contains(where: { $0.id == product && $0.isExpired != true }) {
                return PurchasesAPI.json(.ok, Failure(code: Code.subscriptionExpired.rawValue, message: "Subscription expired",
                                                      error: nil, data: data))
            }
        }
        return PurchasesAPI.json(.ok, Answer(data: data))
    }

    /// The seed's request: `id`, `type`, `transaction` (`ios-appstore` with `appStoreReceipt` or a
    /// StoreKit 2 `jwsRepresentation`; `android-playstore` with `purchaseToken`, `receipt`, `signature`),
    /// `additionalData.applicationUsername`. Fields the plugin adds beside these are ignored. A receipt
    /// longer than `maxReceiptBytes` is refused as too large.
    static func parse(_ body: [UInt8], app: String, maxReceiptBytes: Int) throws(Rejection) -> Request {
        guard let json = JSONValue.parse(body), let object = json.object else { throw Rejection(.malformedJSON, "the body is not a JSON object") }
        guard let transaction = object["transaction"]?.object else { throw Rejection(.missingField, "transaction is missing or not an object") }
        // The plugin sends Apple's bundle id here, empty when StoreKit 2 has no receipt yet: empty is no id.
        let id = try optionalText(object["id"], "id", emptyIsNone: true)
        let product = object["type"]?.string == "application" ? nil : id
        var user: String?
        if let additional = object["additionalData"] {
            guard let fields = additional.object else { throw Rejection(.invalidField, "additionalData is not an object") }
            user = try username(fields["applicationUsername"])
        }
        var parsed = try claim(transaction, app: app, user: user, product: product, maxReceiptBytes: maxReceiptBytes)
        parsed.answerId = id ?? app
        return parsed
    }

    /// `additionalData.applicationUsername`: a string, or an integer as the plugin's type allows
    /// (`string | number`), kept as its decimal text, so `42` and `"42"` name one user.
    static func username(_ value: JSONValue?) throws(Rejection) -> String? {
        let name = "additionalData.applicationUsername"
        var user: String?
        if case .number(let number)? = value {
            // Below 10^15 a double holds every integer exactly: `42`, `42.0` and `4.2e1` are one user.
            guard let value = Double(number.text), value.rounded() == value, abs(value) < 1e15 else {
                throw Rejection(.invalidField, "\(name) must be a string or an integer of at most 15 digits")
            }
            user = String(Int64(value))
        } else {
            guard value == nil || value?.string != nil else { throw Rejection(.invalidField, "\(name) must be a string or an integer") }
            user = try optionalText(value, name)
        }
        if let user, user.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw Rejection(.invalidField, "\(name) contains a control character")
        }
        return user
    }

    /// The claim `transaction` makes, by its `type`: `apple-sk2` (the plugin's StoreKit 2 path: a signed
    /// transaction, its product in `id`), `ios-appstore` (a receipt, or a signed transaction), `android-playstore`.
    private static func claim(_ transaction: [String: JSONValue], app: String, user: String?, product: String?,
                              maxReceiptBytes: Int) throws(Rejection) -> Request {
        func request(_ product: String?, _ claim: PurchaseClaim, _ type: String) -> Request {
            Request(app: app, user: user, product: product, claim: claim, answerId: app, transactionType: type)
        }
        switch try optionalText(transaction["type"], "transaction.type") {
        case "apple-sk2":
            guard let jws = try optionalText(transaction["jwsRepresentation"], "transaction.jwsRepresentation", max: 65_536) else {
                throw Rejection(.missingField, "transaction.jwsRepresentation is missing")
            }
            // Its `id` is the transaction's product (the plugin's own comment: not the numeric transaction id).
            let asked = try optionalText(transaction["id"], "transaction.id", emptyIsNone: true) ?? product
            return request(asked, .appleSignedTransaction(jws), "apple-sk2")
        case "ios-appstore":
            if let jws = try optionalText(transaction["jwsRepresentation"], "transaction.jwsRepresentation", max: 65_536) {
                return request(product, .appleSignedTransaction(jws), "ios-appstore")
            }
            try PurchasesAPI.checkReceiptSize(transaction["appStoreReceipt"], "transaction.appStoreReceipt", maxBytes: maxReceiptBytes)
            guard let receipt = try optionalText(transaction["appStoreReceipt"], "transaction.appStoreReceipt", max: maxReceiptBytes) else {
                throw Rejection(.missingField, "transaction.appStoreReceipt is missing")
            }
            return request(product, .appleReceipt(receipt, bundleId: app), "ios-appstore")
        case "android-playstore":
            guard let token = try optionalText(transaction["purchaseToken"], "transaction.purchaseToken", max: 4_096) else {
                throw Rejection(.missingField, "transaction.purchaseToken is missing")
            }
            guard let product else { throw Rejection(.missingField, "id (the product) is missing") }
            // Google's purchase JSON, when sent, names the product; it is not needed otherwise.
            var productId = product
            if let receipt = transaction["receipt"]?.string, let purchase = JSONValue.parse(Array(receipt.utf8))?.object,
               let named = purchase["productId"]?.string, !named.isEmpty {
                productId = named
            }
            return request(product, .google(packageName: app, productId: productId, purchaseToken: token), "android-playstore")
        case nil:
            throw Rejection(.missingField, "transaction.type is missing")
        default:
            throw Rejection(.invalidField, "transaction.type must be apple-sk2, ios-appstore or android-playstore")
        }
    }

    /// `emptyIsNone`: an empty string reads as absent (the plugin sends `""` for what it does not know yet).
    private static func optionalText(_ value: JSONValue?, _ name: String, max: Int = 256, emptyIsNone: Bool = false) throws(Rejection) -> String? {
        guard let value else { return nil }
        guard let text = value.string else { throw Rejection(.invalidField, "\(name) is not a string") }
        if emptyIsNone, text.isEmpty { return nil }
        guard !text.isEmpty, text.unicodeScalars.count <= max else { throw Rejection(.invalidField, "\(name) must be 1 to \(max) characters") }
        return text
    }

    /// One Purchase object of Iaptic's collection.
    struct Item: Encodable, Equatable {
        var id: String
        var purchaseDate: Int64?
        var expiryDate: Int64?
        var isExpired: Bool?
        var renewalIntent: String?
        var cancelationReason: String?
        var isBillingRetryPeriod: Bool?
        var isTrialPeriod: Bool?
        var isIntroPeriod: Bool?
        var discountId: String?
        var priceConsentStatus: String?
        /// The purchase's opaque id (the plugin's `purchaseId`), never its transaction id or purchase token.
        var purchaseId: String?
        var platform: String
    }

    static func item(_ purchase: VerifiedPurchase, nowMs: Int64, ids: PurchaseIds) -> Item {
        let ms = { (text: String?) in text.flatMap(Timestamp.init(rfc3339:))?.millisecondsSince1970 }
        let subscription = purchase.kind == .subscription
        let expiresMs = ms(purchase.transaction?.expiresAt)
        // A prorated refund that leaves units (Apple's REFUND_PRORATED of a one-time purchase) is not an end.
        let keepsUnits = purchase.type == .purchaseRefunded
            && purchase.transaction.map { Projector.keepsUnits(after: $0, kind: subscription ? .subscription : .oneTime) } == true
        let ended: Bool = switch purchase.type {
        case .subscriptionExpired, .subscriptionRevoked, .purchaseRefunded, .purchaseChargeback, .purchaseCanceled: !keepsUnits
        default: false
        }
        let revoked = !keepsUnits
            && (purchase.type == .subscriptionRevoked || purchase.type == .purchaseRefunded || purchase.type == .purchaseChargeback)
        let autoRenew = purchase.subscription?.autoRenew
        return Item(
            id: purchase.product, purchaseDate: ms(purchase.transaction?.purchasedAt), expiryDate: expiresMs,
            isExpired: subscription ? (ended || (expiresMs.map { $0 <= nowMs } ?? false)) : (revoked ? true : nil),
            renewalIntent: subscription ? autoRenew.map { $0 ? "Renew" : "Lapse" } : nil,
            cancelationReason: revoked ? "Customer" : nil,
            isBillingRetryPeriod: subscription ? (purchase.subscription?.billingRetry ?? false) : nil,
            isTrialPeriod: subscription ? (purchase.offer?.trial ?? false) : nil,
            isIntroPeriod: subscription ? (purchase.offer?.introductory ?? false) : nil,
            discountId: purchase.offer?.id,
            priceConsentStatus: purchase.priceIncreaseAgreed.map { $0 ? "Agreed" : "Notified" },
            purchaseId: ids.id(of: purchase),
            platform: purchase.source.rawValue == "apple" ? "ios-appstore" : "android-playstore")
    }

    struct Answer: Encodable {
        struct Data: Encodable {
            var id: String
            var latest_receipt = true
            var collection: [Item]
            var ineligible_for_intro_price: [String]
            /// The plugin's guard wants an object here (its `NativeTransaction`, told apart by `type`).
            var transaction: NativeTransaction

            init(id: String, collection: [Item], ineligible_for_intro_price: [String], transaction: NativeTransaction) {
                self.id = id
                self.collection = collection
                self.ineligible_for_intro_price = ineligible_for_intro_price
                self.transaction = transaction
            }
        }
        var ok = true
        var data: Data
    }

    /// Iaptic's error shape, with Tollgate's reason code beside its number, and `status`, the HTTP
    /// status the refusal stands for (the plugin's `ErrorPayload.status`).
    struct Failure: Encodable {
        var ok = false
        var code: Int
        var message: String
        var error: String?
        var status: Int?
        var data: Answer.Data?

        init(code: Int, message: String, error: String?, status: Int? = nil, data: Answer.Data? = nil) {
            self.code = code
            self.message = message
            self.error = error
            self.status = status
            self.data = data
        }
    }

    /// The validator URL's parameter that says how refusals come: `body` (HTTP 200, the status in the
    /// body) or `http` (the status on the response).
    static let errorStatusParameter = "errorStatus"

    /// A refusal in Iaptic's shape, `status` the HTTP status it stands for. cordova-plugin-purchase reads a
    /// body only on HTTP 200 (anything else is its communication error, the code lost), so a request with
    /// a validator key in its URL (`apiKey`: how the plugin is set up) is answered 200 with `ok: false`; a
    /// backend's bearer-token request gets the status on the response, as every other route answers.
    /// `errorStatus=body` or `errorStatus=http` chooses either way. `Retry-After` and the challenge ride along.
    @Sendable static func failure(_ rejection: Rejection, _ request: Hummingbird.Request) -> Response {
        let failure = Failure(code: Code(rejection.reason).rawValue, message: rejection.message, error: rejection.code, status: rejection.httpStatus)
        let query = request.uri.queryParameters
        let inBody = switch query.get(errorStatusParameter) {
        case "body": true
        case "http": false
        default: query.get("apiKey") != nil
        }
        var response = PurchasesAPI.json(inBody ? .ok : HTTPResponse.Status(code: rejection.httpStatus), failure)
        for field in rejection.headers { response.headers.append(field) }
        return response
    }
}
