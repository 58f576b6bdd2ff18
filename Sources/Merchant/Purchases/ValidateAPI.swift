import Config
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
    let purchaseIds: PurchaseIdSource
    let credentials: APICredentials
    /// The validator keys, each a client credential of its app.
    let validatorKeys: APICredentials
    let metrics: MerchantMetrics
    let logger: Logger

    public init(service: PurchaseService, purchaseIds: PurchaseIdSource, credentials: APICredentials, keys: [String: String], metrics: MerchantMetrics,
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
        // Published (or verified) already: without the key the purchases go unnamed, never by their store ids.
        let ids = try? await purchaseIds.ids()
        let collection = purchases.map { Self.item($0, nowMs: nowMs, ids: ids) }
        let data = Answer.Data(id: parsed.answerId, collection: collection,
                               ineligible_for_intro_price: Array(Set(purchases.filter { $0.kind == .subscription }.map(\.product))).sorted(),
                               transaction: NativeTransaction(parsed.transactionType, purchases: purchases, product: parsed.product))
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

    static func item(_ purchase: VerifiedPurchase, nowMs: Int64, ids: PurchaseIds?) -> Item {
        let ms = { (text: String?) in text.flatMap(Timestamp.init(rfc3339:))?.millisecondsSince1970 }
        let subscription = purchase.kind == .subscription
        let expiresMs = ms(purchase.transaction?.expiresAt)
        let ended: Bool = switch purchase.type {
        case .subscriptionExpired, .subscriptionRevoked, .purchaseRefunded, .purchaseChargeback, .purchaseCanceled: true
        default: false
        }
        let revoked = purchase.type == .subscriptionRevoked || purchase.type == .purchaseRefunded || purchase.type == .purchaseChargeback
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
            purchaseId: ids?.id(source: purchase.source.rawValue, app: purchase.app, environment: purchase.environment.rawValue,
                                subject: purchase.subject),
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

    /// The plugin's `NativeTransaction`, told apart by `type`: `apple-sk2` has nothing else; an
    /// `ios-appstore` one is Apple's receipt transaction (`AppleTransaction`, in verifyReceipt's names and
    /// date forms); an `android-playstore` one the Play Developer API's purchase (`GooglePurchase`, by
    /// `kind`). Each from the store's verified answer; never a purchase token, a linked token or an account id.
    enum NativeTransaction: Encodable, Equatable {
        /// `apple-sk2`'s, and any without the store's record: the type alone (the plugin's guard wants an object).
        case typeOnly(String)
        case apple(AppleTransaction)
        case playProduct(PlayProduct)
        case playSubscription(PlaySubscription)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .typeOnly(let type): try container.encode(["type": type])
            case .apple(let transaction): try container.encode(transaction)
            case .playProduct(let purchase): try container.encode(purchase)
            case .playSubscription(let purchase): try container.encode(purchase)
            }
        }

        /// The native transaction of the purchase the request is about: the product asked for's, else the first.
        init(_ transactionType: String, purchases: [VerifiedPurchase], product: String?) {
            let purchase = purchases.first { $0.product == product } ?? purchases.first
            switch (transactionType, purchase?.record) {
            case ("apple-sk2", _): self = .typeOnly(transactionType)
            case (_, .playProduct(let purchaseState, let consumptionState, let acknowledgementState, let regionCode)?):
                self = .playProduct(PlayProduct(
                    productId: purchase?.product, orderId: purchase?.transaction?.id,
                    purchaseTimeMillis: (purchase?.transaction?.purchasedAt).flatMap(Timestamp.init(rfc3339:)).map { String($0.millisecondsSince1970) },
                    purchaseState: purchaseState, consumptionState: consumptionState, acknowledgementState: acknowledgementState,
                    quantity: purchase?.transaction?.quantity, regionCode: regionCode))
            case (_, .playSubscription(let state, let acknowledgementState, let regionCode, let lineItems)?):
                self = .playSubscription(PlaySubscription(
                    regionCode: regionCode, startTime: purchase?.transaction?.purchasedAt, subscriptionState: state,
                    latestOrderId: purchase?.transaction?.id, acknowledgementState: acknowledgementState,
                    lineItems: lineItems.map { .init(productId: $0.productId, expiryTime: $0.expiryTime?.rfc3339) }))
            case (_, .apple(let originalPurchaseDate, let webOrderLineItemId)?):
                let date = { (text: String?) in text.flatMap(Timestamp.init(rfc3339:)) }
                let purchased = date(purchase?.transaction?.purchasedAt)
                let expires = date(purchase?.transaction?.expiresAt)
                let revoked = date(purchase?.transaction?.revokedAt)
                self = .apple(AppleTransaction(
                    transaction_id: purchase?.transaction?.id, original_transaction_id: purchase?.subject, product_id: purchase?.product,
                    quantity: purchase?.transaction?.quantity.map(String.init),
                    purchase: AppleDates(purchased), original_purchase: AppleDates(originalPurchaseDate ?? purchased),
                    expires: AppleDates(expires), cancellation: AppleDates(revoked), web_order_line_item_id: webOrderLineItemId))
            case (_, nil): self = .typeOnly(transactionType)
            }
        }
    }

    /// One instant in the three forms Apple's receipts give a date: `2026-11-27 10:15:00 Etc/GMT`,
    /// milliseconds as text, and Pacific time (`2026-11-27 02:15:00 America/Los_Angeles`).
    struct AppleDates: Equatable {
        var gmt: String
        var ms: String
        var pst: String

        init?(_ timestamp: Timestamp?) {
            guard let timestamp else { return nil }
            let date = Date(timeIntervalSince1970: Double(timestamp.millisecondsSince1970) / 1000)
            gmt = Self.format(date, zone: "Etc/GMT")
            ms = String(timestamp.millisecondsSince1970)
            pst = Self.format(date, zone: "America/Los_Angeles")
        }

        static func format(_ date: Date, zone: String) -> String {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: zone) ?? .gmt
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            let two = { (value: Int?) in (value ?? 0) < 10 ? "0\(value ?? 0)" : "\(value ?? 0)" }
            return "\(c.year ?? 1970)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) \(zone)"
        }
    }

    /// cordova-plugin-purchase's `AppleTransaction` (verifyReceipt's `in_app` entry).
    struct AppleTransaction: Encodable, Equatable {
        var type = "ios-appstore"
        var transaction_id: String?
        var original_transaction_id: String?
        var product_id: String?
        var quantity: String?
        var purchase: AppleDates?
        var original_purchase: AppleDates?
        var expires: AppleDates?
        var cancellation: AppleDates?
        var web_order_line_item_id: String?

        enum CodingKeys: String, CodingKey {
            case type, transaction_id, original_transaction_id, product_id, quantity, web_order_line_item_id
            case purchase_date, purchase_date_ms, purchase_date_pst, original_purchase_date, original_purchase_date_ms, original_purchase_date_pst
            case expires_date, expires_date_ms, expires_date_pst, cancellation_date, cancellation_date_ms, cancellation_date_pst
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(type, forKey: .type)
            try c.encodeIfPresent(transaction_id, forKey: .transaction_id)
            try c.encodeIfPresent(original_transaction_id, forKey: .original_transaction_id)
            try c.encodeIfPresent(product_id, forKey: .product_id)
            try c.encodeIfPresent(quantity, forKey: .quantity)
            try c.encodeIfPresent(web_order_line_item_id, forKey: .web_order_line_item_id)
            let dates: [(AppleDates?, CodingKeys, CodingKeys, CodingKeys)] = [
                (purchase, .purchase_date, .purchase_date_ms, .purchase_date_pst),
                (original_purchase, .original_purchase_date, .original_purchase_date_ms, .original_purchase_date_pst),
                (expires, .expires_date, .expires_date_ms, .expires_date_pst),
                (cancellation, .cancellation_date, .cancellation_date_ms, .cancellation_date_pst),
            ]
            for (value, gmt, ms, pst) in dates {
                guard let value else { continue }
                try c.encode(value.gmt, forKey: gmt)
                try c.encode(value.ms, forKey: ms)
                try c.encode(value.pst, forKey: pst)
            }
        }
    }

    /// The Play Developer API's `ProductPurchase` (`purchases.products.get`), as the plugin types it.
    struct PlayProduct: Encodable, Equatable {
        var type = "android-playstore"
        var kind = "androidpublisher#productPurchase"
        var productId: String?
        var orderId: String?
        var purchaseTimeMillis: String?
        var purchaseState: Int?
        var consumptionState: Int?
        var acknowledgementState: Int?
        var quantity: Int?
        var regionCode: String?
    }

    /// The Play Developer API's `SubscriptionPurchaseV2` (`purchases.subscriptionsv2.get`), as the plugin types it.
    struct PlaySubscription: Encodable, Equatable {
        var type = "android-playstore"
        var kind = "androidpublisher#subscriptionPurchaseV2"
        var regionCode: String?
        var startTime: String?
        var subscriptionState: String?
        var latestOrderId: String?
        var acknowledgementState: String?
        var lineItems: [LineItem]

        struct LineItem: Encodable, Equatable {
            var productId: String?
            var expiryTime: String?
        }
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

    /// The validator URL's parameter that asks for refusals with their HTTP status (`errorStatus=http`).
    static let errorStatusParameter = "errorStatus"

    /// A refusal in Iaptic's shape. cordova-plugin-purchase reads a body only on HTTP 200 (anything else
    /// is its communication error, the code lost), so refusals are answered 200 with `ok: false` and the
    /// status they stand for in `status`; a client that asks with `errorStatus=http` gets that status on
    /// the response itself. `Retry-After` and the challenge ride along either way.
    @Sendable static func failure(_ rejection: Rejection, _ request: Hummingbird.Request) -> Response {
        let failure = Failure(code: Code(rejection.reason).rawValue, message: rejection.message, error: rejection.code, status: rejection.httpStatus)
        let asked = request.uri.queryParameters.get(errorStatusParameter) == "http"
        var response = PurchasesAPI.json(asked ? HTTPResponse.Status(code: rejection.httpStatus) : .ok, failure)
        for field in rejection.headers { response.headers.append(field) }
        return response
    }
}
