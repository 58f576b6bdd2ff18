import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Iaptic's `POST /v1/validate`, as cordova-plugin-purchase calls it, answered from
/// the purchases machinery in the seed's shapes, field by field.
@Suite("Purchases API: Iaptic-compatible /v1/validate")
struct ValidateAPITests {
    static let key = "validator-key-0123456789"
    static let query = "?appName=\(ApplePurchases.bundleId)&apiKey=\(key)"

    func setup(_ apple: ApplePurchases) throws -> EntitlementWorkers.PurchasesSetup {
        var setup = try apple.setup()
        setup.settings.validatorKeys = [ApplePurchases.bundleId: Self.key]
        return setup
    }

    /// Runs `body` with workers whose purchases verify against `apple`, on a fresh SQLite store.
    func withValidator(_ apple: ApplePurchases, _ body: (EntitlementStore, WorkerHarness, RunningWorkers) async throws -> Void) async throws {
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try setup(apple)) { workers async throws in
                    try await body(store, harness, workers)
                }
            }
        }
    }

    static func validate(_ api: ValidateAPI, query: String = ValidateAPITests.query, _ json: String,
                         bearer: String? = nil) async throws -> (status: Int, json: JSONValue?, text: String) {
        var head = HTTPRequest(method: .post, scheme: "https", authority: "tollgate.example", path: ValidateAPI.path + query)
        if let bearer { head.headerFields[.authorization] = "Bearer \(bearer)" }
        let response = try await api.routes.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer(string: json))))
        let collected = PurchaseCalls.CollectedBody()
        try await response.body.write(collected)
        let bytes = collected.bytes.withLock { $0 }
        return (response.status.code, JSONValue.parse(bytes), String(decoding: bytes, as: UTF8.self))
    }

    /// The seed's Apple request: the application's receipt, the user as applicationUsername.
    static func appleBody(receipt: String, id: String = ApplePurchases.bundleId, user: String? = "user-v") -> String {
        let additional = user.map { #","additionalData":{"applicationUsername":"\#($0)"}"# } ?? ""
        return #"{"id":"\#(id)","type":"application","transaction":{"type":"ios-appstore","id":"\#(id)","appStoreReceipt":"\#(receipt)"}\#(additional),"products":[]}"#
    }

    @Test("a receipt validates: ok, data.collection of Purchase objects with the seed's fields and types, ineligible_for_intro_price; the user is linked")
    func receiptAnswer() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        let now = Timestamp.now.millisecondsSince1970
        // A subscription in its free trial, bought with an introductory offer, a price increase agreed.
        let payload = AppleBodies.transaction(environment: "Production", bundleId: ApplePurchases.bundleId, signedDate: now,
                                              originalTransactionId: "810001", transactionId: "810002", purchaseDate: now - 60_000,
                                              expiresDate: now + 7 * ApplePurchases.day, appAccountToken: nil)
        let trial = try apple.chain.sign(String(payload.dropLast()) + #","offerType":1,"offerDiscountType":"FREE_TRIAL"}"#)
        let lifetime = try apple.transaction("810101", signedAgoMs: 0, type: "Non-Consumable", productId: "lifetime")
        apple.fake.store(#"{"revision":"r1","bundleId":"com.example","appAppleId":1234,"environment":"Production","hasMore":false,"signedTransactions":["\#(trial)","\#(lifetime)"]}"#,
                         at: "/production/inApps/v2/history/810002")
        let renewal = try apple.chain.sign(String(AppleBodies.renewal(environment: "Production", originalTransactionId: "810001", signedDate: now).dropLast())
                                           + #","priceIncreaseStatus":1}"#)
        apple.fake.store(ApplePurchases.statuses(original: "810001", status: 1, transactionJWS: trial, renewalJWS: renewal),
                         at: "/production/inApps/v1/subscriptions/810001")
        let receipt = try TestReceipt.make(transactions: [("810002", "810001")], signer: apple.receiptChain)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try setup(apple)) { workers async throws in
                    let answer = try await Self.validate(workers.workers.validate, Self.appleBody(receipt: receipt))
                    #expect(answer.status == 200, "\(answer.text)")
                    let json = try #require(answer.json)
                    #expect(json["ok"]?.bool == true)
                    let data = try #require(json["data"]?.object)
                    #expect(data["ineligible_for_intro_price"]?.array?.compactMap(\.string) == ["pro.monthly"])
                    let items = try #require(data["collection"]?.array)
                    let subscription = try #require(items.first { $0["id"]?.string == "pro.monthly" })
                    #expect(subscription["purchaseDate"]?.int64 == now - 60_000)
                    #expect(subscription["expiryDate"]?.int64 == now + 7 * ApplePurchases.day)
                    #expect(subscription["isExpired"]?.bool == false)
                    #expect(subscription["renewalIntent"]?.string == "Renew")
                    #expect(subscription["isBillingRetryPeriod"]?.bool == false)
                    #expect(subscription["isTrialPeriod"]?.bool == true)
                    #expect(subscription["isIntroPeriod"]?.bool == true)
                    #expect(subscription["priceConsentStatus"]?.string == "Agreed")
                    #expect(subscription["cancelationReason"] == nil)
                    let once = try #require(items.first { $0["id"]?.string == "lifetime" })
                    #expect(once["purchaseDate"]?.int64 != nil)
                    #expect(once["expiryDate"] == nil && once["renewalIntent"] == nil)
                    // The keys are the seed's (and the purchase's opaque id and platform), nothing else: no store id.
                    let seedKeys: Set<String> = ["id", "purchaseDate", "expiryDate", "isExpired", "renewalIntent", "renewalIntentChangeDate",
                                                 "cancelationReason", "isBillingRetryPeriod", "isTrialPeriod", "isIntroPeriod", "discountId",
                                                 "priceConsentStatus", "purchaseId", "platform"]
                    for item in items { #expect(Set((item.object ?? [:]).keys).isSubset(of: seedKeys)) }
                    #expect(items.allSatisfy { $0["purchaseId"]?.string?.hasPrefix("pur_") == true })
                    // data.transaction: the plugin's AppleTransaction of the purchase, Apple's three date forms, its ids the opaque one.
                    #expect(PluginResponseTypes.problems(answer.json) == [])
                    let native = try #require(data["transaction"]?.object)
                    #expect(native["type"]?.string == "ios-appstore" && native["product_id"]?.string == "pro.monthly")
                    let purchaseId = try #require(subscription["purchaseId"]?.string)
                    #expect(native["transaction_id"]?.string == purchaseId && native["original_transaction_id"]?.string == purchaseId)
                    // No store id anywhere in the answer.
                    #expect(!answer.text.contains("810001") && !answer.text.contains("810002") && !answer.text.contains("810101"))
                    #expect(native["purchase_date_ms"]?.string == String(now - 60_000))
                    #expect(native["expires_date_ms"]?.string == String(now + 7 * ApplePurchases.day))
                    #expect(native["purchase_date"]?.string == Self.appleDate(now - 60_000, zone: "Etc/GMT"))
                    #expect(native["purchase_date_pst"]?.string == Self.appleDate(now - 60_000, zone: "America/Los_Angeles"))
                    // applicationUsername linked the purchases: the entitlement API tells the same.
                    let entitled = try await store.entitlements(app: ApplePurchases.bundleId, user: "user-v")?.map(\.product) ?? []
                    #expect(Set(entitled) == ["pro.monthly", "lifetime"])
                }
            }
        }
    }

    @Test("a self-made appStoreReceipt naming a customer's transaction is refused (6778001) and Apple is never asked; the genuine receipt validates")
    func forgedReceipt() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try ApplePurchasesTests.storeVictim(apple, original: "860001", id: "860002")
        let victim: [(id: String, original: String)] = [("860002", "860001")]
        let content = TestReceipt.content(transactions: victim)
        let otherRoot = try ApplePurchases.receiptChain(other: true)
        let forgeries: [(String, String, Int, String)] = [
            ("unsigned", TestReceipt.unsigned(content), 422, "invalid_receipt"),
            ("another root", try TestReceipt.sign(content, signer: otherRoot), 401, "untrusted_chain"),
            ("edited", try TestReceipt.tampered(try TestReceipt.make(transactions: [("860009", "860001")], signer: apple.receiptChain),
                                                replacing: "860009", with: "860002"), 401, "bad_signature"),
            ("another app", try TestReceipt.make(transactions: victim, signer: apple.receiptChain, bundleId: "com.other"), 422, "receipt_app_mismatch"),
        ]
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try setup(apple)) { workers async throws in
                    for (name, receipt, status, reason) in forgeries {
                        let answer = try await Self.validate(workers.workers.validate, Self.appleBody(receipt: receipt, user: "attacker"))
                        #expect(answer.status == 200 && answer.json?["status"]?.int64 == Int64(status) && answer.json?["error"]?.string == reason
                                    && answer.json?["code"]?.int64 == 6778001, "\(name): \(answer.status) \(answer.text)")
                        #expect(PluginResponseTypes.problems(answer.json) == [], "\(name)")
                    }
                    #expect(apple.fake.requests.isEmpty)
                    #expect(try await harness.records(harness.topics.events).isEmpty)
                    #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "attacker") == nil)

                    let genuine = try TestReceipt.make(transactions: victim, signer: apple.receiptChain)
                    let answer = try await Self.validate(workers.workers.validate, Self.appleBody(receipt: genuine, user: "victim"))
                    #expect(answer.status == 200 && answer.json?["ok"]?.bool == true, "\(answer.text)")
                    #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "victim")?.map(\.product) == ["pro.monthly"])
                }
            }
        }
    }

    @Test("an expired subscription asked about: ok false, code 6778003, with its data")
    func expiredSubscription() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        let expired = try apple.transaction("820001", signedAgoMs: 0, expiresInMs: -ApplePurchases.day)
        let json = #"{"id":"pro.monthly","type":"paid subscription","transaction":{"type":"ios-appstore","jwsRepresentation":"\#(expired)"},"additionalData":{"applicationUsername":"user-x"}}"#
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try setup(apple)) { workers async throws in
                    let answer = try await Self.validate(workers.workers.validate, json)
                    #expect(answer.status == 200, "\(answer.text)")
                    #expect(answer.json?["ok"]?.bool == false)
                    #expect(answer.json?["code"]?.int64 == 6778003)
                    #expect(answer.json?["message"]?.string != nil)
                    #expect(answer.json?["data"]?["collection"]?.array?.first?["isExpired"]?.bool == true)
                    #expect(PluginResponseTypes.problems(answer.json) == [])
                }
            }
        }
    }

    @Test("errors in Iaptic's shape: to the validator URL 200 with the refusal's status in the body (the HTTP status on errorStatus=http), to a bearer token the HTTP status (200 on errorStatus=body); each counted")
    func errors() async throws {
        let apple = try ApplePurchases()
        apple.stop()
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try setup(apple)) { workers async throws in
                    let api = workers.workers.validate
                    let receipt = try TestReceipt.make(transactions: [("830001", "830001")], signer: apple.receiptChain)
                    let bodies = ["{", #"{"id":"x","type":"application"}"#, #"{"transaction":{"type":"windows-store-transaction"}}"#,
                                  #"{"transaction":{"type":"ios-appstore"}}"#]
                    let cases: [(query: String, body: String, status: Int, code: Int64, reason: String?)] = [
                        ("?appName=com.example&apiKey=validator-key-wrong-000000", Self.appleBody(receipt: receipt), 401, 6778007, "unauthorized"),
                        // The right key beside another: which one a proxy reads is not known, so neither counts.
                        (Self.query + "&apiKey=validator-key-other-00000", Self.appleBody(receipt: receipt), 401, 6778007, "unauthorized"),
                        ("?apiKey=\(Self.key)", Self.appleBody(receipt: receipt), 400, 6778001, "missing_app"),
                        (Self.query, Self.appleBody(receipt: receipt), 503, 6778002, "store_api_unavailable"),
                    ] + bodies.map { (Self.query, $0, 400, 6778001, nil) }
                    for (query, body, status, code, reason) in cases {
                        // The plugin's form: HTTP 200, so its code reaches the app; `status` the refusal's.
                        let answer = try await Self.validate(api, query: query, body)
                        #expect(answer.status == 200 && answer.json?["ok"]?.bool == false && answer.json?["status"]?.int64 == Int64(status)
                                    && answer.json?["code"]?.int64 == code && (reason == nil || answer.json?["error"]?.string == reason),
                                "\(body): \(answer.status) \(answer.text)")
                        #expect(Self.pluginTakes(answer.json) && PluginResponseTypes.problems(answer.json) == [], "\(answer.text)")
                        // Asked for with errorStatus=http: the same answer with its status on the response.
                        let http = try await Self.validate(api, query: query + "&errorStatus=http", body)
                        #expect(http.status == status && http.json?["code"]?.int64 == code && http.json?["status"]?.int64 == Int64(status),
                                "\(body): \(http.status) \(http.text)")
                    }
                    // A backend's bearer-token request (no validator key in the URL) gets the status on the response,
                    // unless it asks errorStatus=body as the plugin's form.
                    let bearer = try await Self.validate(api, query: "?appName=\(ApplePurchases.bundleId)", Self.appleBody(receipt: receipt))
                    #expect(bearer.status == 401 && bearer.json?["error"]?.string == "unauthorized" && bearer.json?["status"]?.int64 == 401)
                    let bodyAsked = try await Self.validate(api, query: "?appName=\(ApplePurchases.bundleId)&errorStatus=body", Self.appleBody(receipt: receipt))
                    #expect(bodyAsked.status == 200 && bodyAsked.json?["status"]?.int64 == 401 && Self.pluginTakes(bodyAsked.json))
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "store_api_unavailable"]) == 2)
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "unauthorized"]) == 6)
                    #expect(try await harness.records(harness.topics.events).isEmpty)
                }
            }
        }
    }
}

/// The Android half of `/v1/validate`: cordova-plugin-purchase's `android-playstore` transaction, checked
/// with the local Google, answered in Iaptic's shape, the user linked and the purchase acknowledged.
@Suite("Purchases API: /v1/validate for Google Play")
struct ValidateGoogleTests {
    @Test("an android-playstore transaction validates: ok, the subscription in data.collection, acknowledged, linked to applicationUsername")
    func googleAnswer() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let token = GooglePurchasesEndToEndTests.token
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: nowMs - 60_000), at: PlayHarness.subscriptionPath(token))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                var (setup, _) = GooglePurchasesEndToEndTests.setup(h, store: store)
                setup.settings.validatorKeys = [PlayHarness.package: ValidateAPITests.key]
                try await harness.withWorkers(store: store, playAPI: GooglePlayEnricher(client: h.client), purchases: setup) { workers async throws in
                    let receipt = #"{\"orderId\":\"GPA.1234\",\"packageName\":\"\#(PlayHarness.package)\",\"productId\":\"premium_monthly\",\"purchaseToken\":\"\#(token)\"}"#
                    let body = #"{"id":"premium_monthly","type":"paid subscription","transaction":{"type":"android-playstore","id":"GPA.1234","purchaseToken":"\#(token)","receipt":"\#(receipt)","signature":"c2ln"},"additionalData":{"applicationUsername":"user-gv"}}"#
                    let answer = try await ValidateAPITests.validate(workers.workers.validate,
                                                                     query: "?appName=\(PlayHarness.package)&apiKey=\(ValidateAPITests.key)", body)
                    #expect(answer.status == 200, "\(answer.text)")
                    #expect(answer.json?["ok"]?.bool == true)
                    let item = try #require(answer.json?["data"]?["collection"]?.array?.first)
                    #expect(item["id"]?.string == "premium_monthly")
                    #expect(item["platform"]?.string == "android-playstore")
                    #expect(item["isExpired"]?.bool == false)
                    #expect(item["expiryDate"]?.int64 != nil && item["purchaseDate"]?.int64 != nil)
                    #expect(answer.json?["data"]?["ineligible_for_intro_price"]?.array?.compactMap(\.string) == ["premium_monthly"])
                    #expect(h.fake.acknowledged.count == 1)
                    // data.transaction: the Play Developer API's SubscriptionPurchaseV2 as the plugin types it, never the token.
                    #expect(PluginResponseTypes.problems(answer.json) == [])
                    let native = try #require(answer.json?["data"]?["transaction"]?.object)
                    #expect(native["type"]?.string == "android-playstore" && native["kind"]?.string == "androidpublisher#subscriptionPurchaseV2")
                    #expect(native["lineItems"]?.array?.first?["productId"]?.string == "premium_monthly")
                    #expect(native["subscriptionState"]?.string == "SUBSCRIPTION_STATE_ACTIVE")
                    #expect(!answer.text.contains(token))
                    #expect(try await store.entitlements(app: PlayHarness.package, user: "user-gv")?.map(\.product) == ["premium_monthly"])
                }
            }
        }
    }
}

extension ValidateGoogleTests {
    @Test("android-playstore refusals in Iaptic's shape: a package not configured, a token Google does not know, another product's token, Google down; none names the token, nothing published")
    func googleRefusals() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let token = GooglePurchasesEndToEndTests.token
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: nowMs - 60_000), at: PlayHarness.subscriptionPath(token))
        func body(product: String, token: String, package: String = PlayHarness.package) -> String {
            let receipt = #"{\"orderId\":\"GPA.1234\",\"packageName\":\"\#(package)\",\"productId\":\"\#(product)\",\"purchaseToken\":\"\#(token)\"}"#
            return #"{"id":"\#(product)","type":"paid subscription","transaction":{"type":"android-playstore","id":"GPA.1234","purchaseToken":"\#(token)","receipt":"\#(receipt)","signature":"c2ln"},"additionalData":{"applicationUsername":"user-gr"}}"#
        }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                var (setup, _) = GooglePurchasesEndToEndTests.setup(h, store: store)
                setup.settings.validatorKeys = [PlayHarness.package: ValidateAPITests.key, "com.example.unconfigured": ValidateAPITests.key + "-other"]
                try await harness.withWorkers(store: store, playAPI: GooglePlayEnricher(client: h.client), purchases: setup) { workers async throws in
                    let api = workers.workers.validate
                    let query = "?appName=\(PlayHarness.package)&apiKey=\(ValidateAPITests.key)&errorStatus=http"
                    let cases: [(String, String, Int, Int64, String)] = [
                        ("?appName=com.example.unconfigured&apiKey=\(ValidateAPITests.key)-other&errorStatus=http",
                         body(product: "premium_monthly", token: token, package: "com.example.unconfigured"), 403, 6778001, "unknown_package"),
                        (query, body(product: "premium_monthly", token: "token-google-never-issued"), 422, 6778001, "purchase_not_found"),
                        (query, body(product: "lifetime_unlock", token: token), 422, 6778001, "purchase_not_found"),
                    ]
                    for (query, body, status, code, reason) in cases {
                        let answer = try await ValidateAPITests.validate(api, query: query, body)
                        #expect(answer.status == status && answer.json?["code"]?.int64 == code && answer.json?["error"]?.string == reason,
                                "\(reason): \(answer.status) \(answer.text)")
                        #expect(!answer.text.contains(token) && !answer.text.contains("token-google-never-issued"))
                    }
                    h.fake.script(PlayHarness.subscriptionPath(token),
                                  .reply(.json(503, #"{"error": {"code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}}"#)))
                    // The plugin's form (no errorStatus): 200 with the status and Iaptic's connection code in the body.
                    let down = try await ValidateAPITests.validate(api, query: "?appName=\(PlayHarness.package)&apiKey=\(ValidateAPITests.key)",
                                                                   body(product: "premium_monthly", token: token))
                    #expect(down.status == 200 && down.json?["ok"]?.bool == false && down.json?["status"]?.int64 == 503
                                && down.json?["code"]?.int64 == 6778002 && down.json?["error"]?.string == "store_api_unavailable", "\(down.text)")
                    #expect(ValidateAPITests.pluginTakes(down.json) && !down.text.contains(token))
                    #expect(try await harness.records(harness.topics.events).isEmpty)
                    #expect(h.fake.acknowledgeCalls.isEmpty)
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "purchase_not_found"]) == 2)
                }
            }
        }
    }
}

extension ValidateAPITests {
    /// StoreKit 2's request: the signed transaction, the user as applicationUsername (or none).
    static func signedBody(_ jws: String, user: String?) -> String {
        let additional = user.map { #","additionalData":{"applicationUsername":"\#($0)"}"# } ?? ""
        return #"{"id":"lifetime","type":"application","transaction":{"type":"ios-appstore","id":"lifetime","jwsRepresentation":"\#(jws)"}\#(additional)}"#
    }

    /// A date as Apple's receipts write it (`2026-11-27 10:15:00 Etc/GMT`), computed here with Foundation's formatter.
    static func appleDate(_ ms: Int64, zone: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: zone)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000)) + " " + zone
    }

    /// cordova-plugin-purchase's `isValidatorResponsePayload` (src/ts/validator/validator.ts, 13.18): an
    /// answer it does not take is reported to the app as BAD_RESPONSE, whatever the purchase.
    static func pluginTakes(_ json: JSONValue?) -> Bool {
        guard let object = json?.object, case .bool(let ok)? = object["ok"] else { return false }
        guard ok else { return true }
        guard let data = object["data"]?.object, data["id"]?.string != nil, data["transaction"]?.object != nil else { return false }
        return true
    }

    /// The body the plugin posts in StoreKit 2 mode (appstore-adapter.ts): the bundle id as `id`, type
    /// `application`, the transaction's product as `transaction.id`, the user the app set.
    static func storeKit2Body(_ jws: String, product: String, id: String = ApplePurchases.bundleId, user: String = #""user-k""#) -> String {
        #"{"id":"\#(id)","type":"application","products":[],"transaction":{"type":"apple-sk2","id":"\#(product)","jwsRepresentation":"\#(jws)"},"additionalData":{"applicationUsername":\#(user)},"device":{"plugin":"cordova-plugin-purchase/13.18.0","platform":"iOS"}}"#
    }

    @Test("the plugin's StoreKit 2 request validates, and every answer passes the plugin's own guard: data.id, latest_receipt, data.transaction")
    func storeKit2() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await withValidator(apple) { store, _, workers in
            let api = workers.workers.validate
            let jws = try apple.transaction("840001", signedAgoMs: 0, type: "Non-Consumable", productId: "lifetime")
            let answer = try await Self.validate(api, Self.storeKit2Body(jws, product: "lifetime"))
            #expect(answer.status == 200 && answer.json?["ok"] == .bool(true), "\(answer.text)")
            #expect(Self.pluginTakes(answer.json) && PluginResponseTypes.problems(answer.json) == [])
            #expect(answer.json?["data"]?["id"]?.string == ApplePurchases.bundleId)
            #expect(answer.json?["data"]?["latest_receipt"] == .bool(true))
            #expect(answer.json?["data"]?["transaction"]?["type"]?.string == "apple-sk2")
            #expect(answer.json?["data"]?["collection"]?.array?.first?["id"]?.string == "lifetime")
            let key = PurchaseKey(source: "apple", app: ApplePurchases.bundleId, environment: "production", subject: "840001")
            #expect(try await store.purchase(key)?.user == "user-k")

            // Before StoreKit 2 has a receipt the plugin sends an empty id: the answer is named by the app.
            let unnamed = try await Self.validate(api, Self.storeKit2Body(jws, product: "lifetime", id: ""))
            #expect(unnamed.status == 200 && unnamed.json?["data"]?["id"]?.string == ApplePurchases.bundleId, "\(unnamed.text)")
            #expect(Self.pluginTakes(unnamed.json))

            // Asking about a product the transaction does not hold: ok false (not owned), with what it holds.
            let other = try await Self.validate(api, Self.storeKit2Body(jws, product: "pro.yearly"))
            #expect(other.status == 200 && other.json?["ok"] == .bool(false), "\(other.text)")
            #expect(other.json?["code"]?.int64 == 6778001 && other.json?["data"]?["collection"]?.array?.first?["id"]?.string == "lifetime")
            #expect(Self.pluginTakes(other.json) && PluginResponseTypes.problems(other.json) == [])

            // The plugin's type allows applicationUsername as a number: 42 is the user "42"; 4.5 names nobody.
            let numbered = try apple.transaction("840101", signedAgoMs: 0, type: "Non-Consumable", productId: "lifetime")
            let byNumber = try await Self.validate(api, Self.storeKit2Body(numbered, product: "lifetime", user: "42"))
            #expect(byNumber.status == 200 && byNumber.json?["ok"] == .bool(true), "\(byNumber.text)")
            let numberedKey = PurchaseKey(source: "apple", app: ApplePurchases.bundleId, environment: "production", subject: "840101")
            #expect(try await store.purchase(numberedKey)?.user == "42")
            let fraction = try await Self.validate(api, Self.storeKit2Body(numbered, product: "lifetime", user: "4.5"))
            #expect(fraction.json?["error"]?.string == "invalid_field" && fraction.json?["code"]?.int64 == 6778001, "\(fraction.text)")
        }
    }

    @Test("a signed transaction saved before its refund answers as refunded, not owned; from the app, a purchase is answered only with its user")
    func answersAsStored() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await withValidator(apple) { store, harness, workers in
            let api = workers.workers.validate
            let saved = try apple.transaction("890001", signedAgoMs: 60_000, type: "Non-Consumable", productId: "lifetime")
            // Shared without a user (a copied receipt or transaction): nothing is unlocked.
            let anonymous = try await Self.validate(api, Self.signedBody(saved, user: nil))
            #expect(anonymous.status == 200 && anonymous.json?["status"]?.int64 == 400 && anonymous.json?["ok"] == .bool(false), "\(anonymous.text)")
            #expect(anonymous.json?["code"]?.int64 == 6778001 && anonymous.json?["error"]?.string == "missing_user")

            let owned = try await Self.validate(api, Self.signedBody(saved, user: "user-s"))
            #expect(owned.status == 200 && owned.json?["ok"] == .bool(true), "\(owned.text)")
            #expect(owned.json?["data"]?["collection"]?.array?.first?["isExpired"] == nil)
            // A signed transaction's native transaction is Apple's, named by the purchase's opaque id, never the store's.
            #expect(PluginResponseTypes.problems(owned.json) == [])
            #expect(owned.json?["data"]?["transaction"]?["transaction_id"]?.string?.hasPrefix("pur_") == true && !owned.text.contains("890001"))

            // Apple refunds it: its notification, signed after the saved transaction.
            let refunded = try apple.transaction("890001", signedAgoMs: 0, type: "Non-Consumable", productId: "lifetime", revokedAgoMs: 1_000)
            let delivery = try await apple.chain.source(apps: [ApplePurchases.app])
                .handle(AppleBodies.request(try apple.notification("REFUND", transactionJWS: refunded)))
            let notification = try #require(delivery.events.first)
            try await harness.publish(notification)
            try await waitUntil("the refund applied") { try await store.hasProcessed(eventId: notification.id) }

            let replayed = try await Self.validate(api, Self.signedBody(saved, user: "user-s"))
            #expect(replayed.status == 200, "\(replayed.text)")
            let item = try #require(replayed.json?["data"]?["collection"]?.array?.first)
            #expect(item["isExpired"] == .bool(true) && item["cancelationReason"]?.string == "Customer", "\(replayed.text)")
            #expect(PluginResponseTypes.problems(replayed.json) == [])
        }
    }
}

extension ValidateGoogleTests {
    @Test("a Play one-time product's native transaction is its ProductPurchase as the plugin types it: its states, never the token or the order id")
    func productNativeTransaction() throws {
        var purchase = VerifiedPurchase(
            source: .google, app: PlayHarness.package, environment: .production, subject: "token-of-the-buyer", product: "coins_100",
            kind: .oneTime, type: .purchaseCompleted, occurredAt: Timestamp(millisecondsSince1970: 1_790_000_000_000),
            transaction: .init(id: "GPA.3300-1", purchasedAt: Timestamp(millisecondsSince1970: 1_789_999_000_000).rfc3339, quantity: 2))
        purchase.record = .playProduct(purchaseState: 0, consumptionState: 0, acknowledgementState: 1, regionCode: "US")
        let data = ValidateAPI.Answer.Data(id: "coins_100", collection: [ValidateAPI.item(purchase, nowMs: 1_790_000_000_000, ids: PurchaseIds(key: [1]))],
                                           ineligible_for_intro_price: [],
                                           transaction: .init("android-playstore", purchases: [purchase], product: "coins_100") { _ in "pur_x" })
        let text = String(decoding: try JSONEncoder().encode(ValidateAPI.Answer(data: data)), as: UTF8.self)
        let json = JSONValue.parse(Array(text.utf8))
        #expect(PluginResponseTypes.problems(json) == [], "\(text)")
        let native = try #require(json?["data"]?["transaction"]?.object)
        #expect(native["kind"]?.string == "androidpublisher#productPurchase" && native["productId"]?.string == "coins_100")
        #expect(native["purchaseTimeMillis"]?.string == "1789999000000" && native["quantity"]?.int64 == 2 && native["acknowledgementState"]?.int64 == 1)
        #expect(!text.contains("token-of-the-buyer") && !text.contains("GPA.3300-1"))
    }
}

extension ValidateGoogleTests {
    @Test("a one-time purchase a prorated refund left units of is answered as held; refunded in full, as cancelled by the customer")
    func proratedRefundAnswer() {
        func item(_ revocation: NormalizedEvent.Transaction.Revocation, share: Int) -> ValidateAPI.Item {
            let purchase = VerifiedPurchase(
                source: .apple, app: "com.example", environment: .production, subject: "2000", product: "coins.100",
                kind: .oneTime, type: .purchaseRefunded, occurredAt: Timestamp(millisecondsSince1970: 1_790_000_000_000),
                transaction: .init(id: "2001", quantity: 3, revocationType: revocation, revocationPercentage: share))
            return ValidateAPI.item(purchase, nowMs: 1_790_000_000_000, ids: PurchaseIds(key: [1]))
        }
        let partly = item(.refundProrated, share: 33_333)
        #expect(partly.isExpired == nil && partly.cancelationReason == nil)
        let fully = item(.refundFull, share: 100_000)
        #expect(fully.isExpired == true && fully.cancelationReason == "Customer")
        // A copy Apple signed after the partial refund, sent once the purchase was refunded in full: the stored end wins.
        let copy = VerifiedPurchase(
            source: .apple, app: "com.example", environment: .production, subject: "2000", product: "coins.100",
            kind: .oneTime, type: .purchaseRefunded, occurredAt: Timestamp(millisecondsSince1970: 1_790_000_000_000),
            transaction: .init(id: "2001", quantity: 3, revocationType: .refundProrated, revocationPercentage: 33_333))
        let stored = Purchase(key: PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "2000"), kind: .oneTime,
                              state: .refunded, quantity: 0, lastEventAtMs: 1_790_000_100_000, lastEventId: "apple:later", lastEventType: "purchase.refunded")
        let answered = ValidateAPI.item(PurchaseService.asStored(copy, stored), nowMs: 1_790_000_200_000, ids: PurchaseIds(key: [1]))
        #expect(answered.isExpired == true && answered.cancelationReason == "Customer")
    }
}
