import Config
import Entitlements
import Events
import Foundation
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// An app reports its Apple purchase with its user (`POST /v1/purchases`); Apple's signed
/// data (made with a chain the test generates; the API a local server answering as Apple documents)
/// proves it, the workers apply it, and the answer is the user's entitlements.
@Suite("Purchases API: Apple")
struct ApplePurchasesTests {
    static let tokens = [APIToken(ApplePurchases.token)]

    func entitled(_ store: EntitlementStore, _ user: String, environment: String = "production") async throws -> [String] {
        let found = try await store.entitlements(app: ApplePurchases.bundleId, user: user, environment: environment) ?? []
        return found.filter { $0.isActive(atMs: Timestamp.now.millisecondsSince1970) }.map(\.product)
    }

    @Test("a signed transaction entitles a user whose notifications name none; later notifications keep the link; the same post again publishes nothing",
          arguments: Backend.allCases)
    func signedTransactionLinksUser(backend: Backend) async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let jws = try apple.transaction("800001")
                    let first = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-a", "signedTransaction", jws))
                    #expect(first.status == 200, "\(first.text)")
                    #expect(first.body?.environment == "production")
                    #expect(first.body?.entitlements?.map(\.product) == ["pro.monthly"])
                    // The purchase by its opaque id: the answer never carries the transaction id.
                    #expect(first.body?.purchases?.first?.purchaseId.hasPrefix("pur_") == true && !first.text.contains("800001"))
                    let eventIds = try #require(first.body?.eventIds)
                    #expect(eventIds.count == 1 && eventIds[0].hasPrefix("apple:purchase:"))
                    let published = try await harness.records(harness.topics.events).count

                    // A renewal notification without appAccountToken: the purchase stays user-a's.
                    let renewal = try apple.transaction("800001", transactionId: "800002", signedAgoMs: 0)
                    let delivery = try await apple.chain.source(apps: [ApplePurchases.app])
                        .handle(AppleBodies.request(try apple.notification("DID_RENEW", transactionJWS: renewal)))
                    let notification = try #require(delivery.events.first)
                    #expect(notification.user == nil)
                    try await harness.publish(notification)
                    try await waitUntil("the renewal applied") { try await store.hasProcessed(eventId: notification.id) }
                    let purchase = try await store.purchase(PurchaseKey(source: "apple", app: ApplePurchases.bundleId, environment: "production",
                                                                        subject: "800001"))
                    #expect(purchase?.user == "user-a")
                    #expect(purchase?.lastEventId == notification.id)
                    #expect(try await entitled(store, "user-a") == ["pro.monthly"])

                    // The same post again: the same entitlements, no event.
                    let again = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-a", "signedTransaction", jws))
                    #expect(again.status == 200, "\(again.text)")
                    #expect(again.body?.eventIds == [])
                    #expect(again.body?.entitlements?.map(\.product) == ["pro.monthly"])
                    #expect(try await harness.records(harness.topics.events).count == published + 1)
                }
            }
        }
    }

    @Test("a transaction signed before the store's latest word still links its user, without rolling the state back")
    func olderTransactionLinksOnly() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    // Apple said it expired (now); the app then reports the transaction it holds, signed a minute ago.
                    let held = try apple.transaction("800101", signedAgoMs: 60_000)
                    let expired = try apple.transaction("800101", signedAgoMs: 0, expiresInMs: -1_000)
                    let delivery = try await apple.chain.source(apps: [ApplePurchases.app])
                        .handle(AppleBodies.request(try apple.notification("EXPIRED", subtype: "VOLUNTARY", transactionJWS: expired)))
                    let notification = try #require(delivery.events.first)
                    try await harness.publish(notification)
                    try await waitUntil("the expiry applied") { try await store.hasProcessed(eventId: notification.id) }

                    let answer = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-c", "signedTransaction", held))
                    #expect(answer.status == 200, "\(answer.text)")
                    #expect(answer.body?.entitlements?.isEmpty == true)
                    let purchase = try await store.purchase(PurchaseKey(source: "apple", app: ApplePurchases.bundleId, environment: "production",
                                                                        subject: "800101"))
                    #expect(purchase?.user == "user-c")
                    #expect(purchase?.state == .expired)
                }
            }
        }
    }

    @Test("ownership: transfer moves the purchase and publishes both changes; keep refuses with 409 and changes nothing",
          arguments: Backend.allCases)
    func transferAndKeep(backend: Backend) async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let jws = try apple.transaction("800201")
                    let api = workers.workers.purchases
                    #expect(try await PurchaseCalls.post(api, PurchaseCalls.apple(user: "user-a", "signedTransaction", jws)).status == 200)
                    let moved = try await PurchaseCalls.post(api, PurchaseCalls.apple(user: "user-b", "signedTransaction", jws))
                    #expect(moved.status == 200, "\(moved.text)")
                    #expect(moved.body?.entitlements?.map(\.product) == ["pro.monthly"])
                    #expect(try await entitled(store, "user-a") == [])
                    #expect(try await entitled(store, "user-b") == ["pro.monthly"])
                    let changes = try await harness.records(harness.topics.entitlements, atLeast: 3).map(EntitlementRecord.init)
                    #expect(changes.contains { $0.user == "user-a" && !$0.active })
                    #expect(changes.contains { $0.user == "user-b" && $0.active })
                    // And back: a third claim moves it again (a new event, not the first one's id).
                    let back = try await PurchaseCalls.post(api, PurchaseCalls.apple(user: "user-a", "signedTransaction", jws))
                    #expect(back.status == 200 && back.body?.entitlements?.map(\.product) == ["pro.monthly"], "\(back.text)")
                }
                try await harness.withWorkers(store: store, purchases: try apple.setup(ownership: [ApplePurchases.bundleId: .keep]),
                                              apiTokens: Self.tokens) { workers async throws in
                    let jws = try apple.transaction("800201")
                    let before = try await harness.records(harness.topics.events).count
                    let refused = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-b", "signedTransaction", jws))
                    #expect(refused.status == 409)
                    #expect(refused.error == "already_owned")
                    #expect(try await entitled(store, "user-a") == ["pro.monthly"])
                    #expect(try await harness.records(harness.topics.events).count == before)
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "already_owned"]) == 1)
                }
            }
        }
    }

    @Test("a transaction id goes through the App Store Server API, production then sandbox; a sandbox purchase never entitles production")
    func transactionIdThroughTheAPI() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        let signed = try apple.transaction("800301", transactionId: "800305", environment: "Sandbox", signedAgoMs: 0)
        apple.fake.store(#"{"signedTransactionInfo":"\#(signed)"}"#, at: "/sandbox/inApps/v1/transactions/800305")
        let renewal = try apple.chain.sign(AppleBodies.renewal(environment: "Sandbox", originalTransactionId: "800301",
                                                               signedDate: Timestamp.now.millisecondsSince1970))
        apple.fake.store(ApplePurchases.statuses(original: "800301", status: 1, transactionJWS: signed, renewalJWS: renewal, environment: "Sandbox"),
                         at: "/sandbox/inApps/v1/subscriptions/800301")
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let answer = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "tester", "transactionId", "800305"))
                    #expect(answer.status == 200, "\(answer.text)")
                    #expect(answer.body?.environment == "sandbox")
                    #expect(answer.body?.entitlements?.map(\.product) == ["pro.monthly"])
                    #expect(apple.fake.requests.map(\.target) == ["/production/inApps/v1/transactions/800305", "/sandbox/inApps/v1/transactions/800305",
                                                                  "/sandbox/inApps/v1/subscriptions/800301"])
                    #expect(apple.fake.jwtProblems.isEmpty)
                    #expect(try await entitled(store, "tester", environment: "sandbox") == ["pro.monthly"])
                    #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "tester", environment: "production") == nil)
                }
            }
        }
    }

    @Test("a legacy receipt: its transaction ids, Get Transaction History and the subscription's status entitle each purchase")
    func receiptThroughTheAPI() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        let subscription = try apple.transaction("800401", transactionId: "800402", signedAgoMs: 0)
        let older = try apple.transaction("800401", transactionId: "800401", signedAgoMs: 0, expiresInMs: -Self.day)
        let lifetime = try apple.transaction("800501", signedAgoMs: 0, type: "Non-Consumable", productId: "lifetime")
        apple.fake.store(#"{"revision":"r1","bundleId":"com.example","appAppleId":1234,"environment":"Production","hasMore":false,"signedTransactions":["\#(older)","\#(subscription)","\#(lifetime)"]}"#,
                         at: "/production/inApps/v2/history/800401")
        let renewal = try apple.chain.sign(AppleBodies.renewal(environment: "Production", originalTransactionId: "800401",
                                                               signedDate: Timestamp.now.millisecondsSince1970))
        apple.fake.store(ApplePurchases.statuses(original: "800401", status: 1, transactionJWS: subscription, renewalJWS: renewal),
                         at: "/production/inApps/v1/subscriptions/800401")
        let receipt = try TestReceipt.make(transactions: [("800401", "800401"), ("800501", "800501")], signer: apple.receiptChain)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let answer = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-r", "receipt", receipt))
                    #expect(answer.status == 200, "\(answer.text)")
                    #expect(Set(answer.body?.entitlements?.map(\.product) ?? []) == ["pro.monthly", "lifetime"])
                    #expect(Set(answer.body?.purchases?.map(\.purchaseId) ?? []).count == 2)
                    #expect(!answer.text.contains("800401") && !answer.text.contains("800501"))
                    #expect(apple.fake.requests.first?.target == "/production/inApps/v2/history/800401")
                }
            }
        }
    }

    @Test("a receipt costs a bounded number of App Store calls: history pages up to the cap, one statuses call for every subscription")
    func receiptCallsAreBounded() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        let originals = ["860001", "860101", "860201"]
        let subscriptions = try originals.map { try apple.transaction($0, signedAgoMs: 0, productId: "pro.\($0)") }
        // Apple's history says there is always more: the cap, not Apple, ends the reading.
        let page = #"{"revision":"next","bundleId":"com.example","appAppleId":1234,"environment":"Production","hasMore":true,"signedTransactions":[\#(subscriptions.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        apple.fake.store(page, at: "/production/inApps/v2/history/860001")
        apple.fake.store(page, at: "/production/inApps/v2/history/860001?revision=next")
        // Get All Subscription Statuses answers every subscription of the customer's app at once.
        let renewals = try originals.map { try apple.chain.sign(AppleBodies.renewal(environment: "Production", originalTransactionId: $0,
                                                                                       signedDate: Timestamp.now.millisecondsSince1970)) }
        let last = zip(zip(originals, subscriptions), renewals).map { pair, renewal in
            #"{"originalTransactionId":"\#(pair.0)","status":1,"signedTransactionInfo":"\#(pair.1)","signedRenewalInfo":"\#(renewal)"}"#
        }
        apple.fake.store(#"{"environment":"Production","bundleId":"com.example","appAppleId":1234,"data":[{"subscriptionGroupIdentifier":"21","lastTransactions":[\#(last.joined(separator: ","))]}]}"#,
                         at: "/production/inApps/v1/subscriptions/860001")
        let receipt = try TestReceipt.make(transactions: originals.map { ($0, $0) }, signer: apple.receiptChain)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let answer = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-b", "receipt", receipt))
                    #expect(answer.status == 200, "\(answer.text)")
                    #expect(answer.body?.purchases?.count == 3)
                    let targets = apple.fake.requests.map(\.target)
                    #expect(targets.filter { $0.contains("/history/") }.count == ApplePurchaseVerifier.maxHistoryPages, "\(targets)")
                    #expect(targets.filter { $0.contains("/subscriptions/") }.count == 1, "\(targets)")
                    #expect(targets.count <= ApplePurchaseVerifier.maxHistoryPages + 2)
                }
            }
        }
    }

    @Test("Apple's history for a receipt's id must hold one of the receipt's transactions: another customer's history is not taken")
    func historyMustHoldTheReceipt() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        let stranger = try apple.transaction("861001", signedAgoMs: 0)
        apple.fake.store(#"{"revision":"r1","bundleId":"com.example","appAppleId":1234,"environment":"Production","hasMore":false,"signedTransactions":["\#(stranger)"]}"#,
                         at: "/production/inApps/v2/history/861900")
        let receipt = try TestReceipt.make(transactions: [("861900", "861900")], signer: apple.receiptChain)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let answer = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-h", "receipt", receipt))
                    #expect(answer.status == 422 && answer.error == "purchase_not_found", "\(answer.text)")
                    #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "user-h") == nil)
                }
            }
        }
    }

    /// The victim's subscription as Apple's API knows it: its history under `id`, its status.
    static func storeVictim(_ apple: ApplePurchases, original: String, id: String) throws {
        let subscription = try apple.transaction(original, transactionId: id, signedAgoMs: 0)
        apple.fake.store(#"{"revision":"r1","bundleId":"com.example","appAppleId":1234,"environment":"Production","hasMore":false,"signedTransactions":["\#(subscription)"]}"#,
                         at: "/production/inApps/v2/history/\(id)")
        let renewal = try apple.chain.sign(AppleBodies.renewal(environment: "Production", originalTransactionId: original,
                                                               signedDate: Timestamp.now.millisecondsSince1970))
        apple.fake.store(ApplePurchases.statuses(original: original, status: 1, transactionJWS: subscription, renewalJWS: renewal),
                         at: "/production/inApps/v1/subscriptions/\(original)")
    }

    @Test("a self-made receipt naming a customer's transaction (unsigned, self-signed, another root's, a developer certificate's, edited, another app's) is refused; Apple is never asked and the customer keeps the purchase")
    func forgedReceiptsTakeNothing() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try Self.storeVictim(apple, original: "840001", id: "840002")
        let victim: [(id: String, original: String)] = [("840002", "840001")]
        let content = TestReceipt.content(transactions: victim)
        let otherRoot = try ApplePurchases.receiptChain(other: true)
        let developer = try ApplePurchases.receiptChain(leafOID: "1.2.840.113635.100.6.1.2")
        let attackersOwn = try TestReceipt.make(transactions: [("840009", "840001")], signer: apple.receiptChain)
        let forgeries: [(String, String, Int, String)] = [
            ("unsigned", TestReceipt.unsigned(content), 422, "invalid_receipt"),
            ("self-signed", try TestReceipt.sign(content, signer: otherRoot, certificate: otherRoot.root, key: otherRoot.rootKey, certificates: []),
             401, "untrusted_chain"),
            ("another root", try TestReceipt.sign(content, signer: otherRoot), 401, "untrusted_chain"),
            ("developer certificate", try TestReceipt.sign(content, signer: developer), 401, "missing_apple_oid"),
            ("edited", try TestReceipt.tampered(attackersOwn, replacing: "840009", with: "840002"), 401, "bad_signature"),
            ("another app", try TestReceipt.make(transactions: victim, signer: apple.receiptChain, bundleId: "com.other"), 422, "receipt_app_mismatch"),
        ]
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let api = workers.workers.purchases
                    let genuine = try TestReceipt.make(transactions: victim, signer: apple.receiptChain)
                    let owned = try await PurchaseCalls.post(api, PurchaseCalls.apple(user: "victim", "receipt", genuine))
                    #expect(owned.status == 200, "\(owned.text)")
                    #expect(try await entitled(store, "victim") == ["pro.monthly"])
                    let asked = apple.fake.requests.count
                    let published = try await harness.records(harness.topics.events).count

                    for (name, receipt, status, reason) in forgeries {
                        let answer = try await PurchaseCalls.post(api, PurchaseCalls.apple(user: "attacker", "receipt", receipt))
                        #expect(answer.status == status && answer.error == reason, "\(name): \(answer.status) \(answer.text)")
                        // Refusals never repeat the receipt or a transaction id.
                        #expect(!answer.text.contains("840002") && !answer.text.contains("840001"), "\(name): \(answer.text)")
                    }
                    #expect(apple.fake.requests.count == asked, "Apple was asked about a forged receipt's id")
                    #expect(try await harness.records(harness.topics.events).count == published)
                    #expect(try await entitled(store, "victim") == ["pro.monthly"])
                    #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "attacker") == nil)
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "untrusted_chain"]) == 2)
                }
            }
        }
    }

    @Test("a receipt made while its chain was valid still entitles after its WWDR intermediate expired; one made after is refused")
    func receiptChainCheckedAtCreation() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try Self.storeVictim(apple, original: "840101", id: "840102")
        // The configured root's chain, with an intermediate that expired at the start of 2022.
        let expired = try ApplePurchases.receiptChain(intermediateValidity: AppleTestChain.y2020...(AppleTestChain.y2020 + 2 * 365 * 86_400))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let api = workers.workers.purchases
                    let late = try TestReceipt.make(transactions: [("840102", "840101")], signer: expired, createdAt: "2023-06-01T00:00:00Z")
                    let refused = try await PurchaseCalls.post(api, PurchaseCalls.apple(user: "user-e", "receipt", late))
                    #expect(refused.status == 401 && refused.error == "certificate_expired", "\(refused.text)")
                    #expect(apple.fake.requests.isEmpty)

                    let madeThen = try TestReceipt.make(transactions: [("840102", "840101")], signer: expired, createdAt: "2021-06-01T00:00:00Z")
                    let answer = try await PurchaseCalls.post(api, PurchaseCalls.apple(user: "user-e", "receipt", madeThen))
                    #expect(answer.status == 200, "\(answer.text)")
                    #expect(answer.body?.entitlements?.map(\.product) == ["pro.monthly"])
                    #expect(apple.fake.requests.first?.target == "/production/inApps/v2/history/840102")
                }
            }
        }
    }

    @Test("a receipt longer than purchases.maxReceiptBytes is 413 on both routes, and Apple is not asked")
    func receiptOverTheLimit() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        var setup = try apple.setup()
        setup.settings.validatorKeys = [ApplePurchases.bundleId: ValidateAPITests.key]
        let limit = setup.settings.maxReceiptBytes
        #expect(limit == 1 << 20)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: setup, apiTokens: Self.tokens) { workers async throws in
                    let tooLong = String(repeating: "A", count: limit + 4)
                    let purchase = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "u", "receipt", tooLong))
                    #expect(purchase.status == 413 && purchase.error == "body_too_large", "\(purchase.status) \(purchase.text.prefix(200))")
                    let validate = try await ValidateAPITests.validate(workers.workers.validate, ValidateAPITests.appleBody(receipt: tooLong))
                    #expect(validate.status == 200 && validate.json?["status"]?.int64 == 413 && validate.json?["error"]?.string == "body_too_large",
                            "\(validate.status) \(validate.text.prefix(200))")
                    #expect(validate.json?["code"]?.int64 == 6778001)
                    // At the limit it is read, and refused only as what it is (not a receipt).
                    let atLimit = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "u", "receipt", String(tooLong.dropLast(4))))
                    #expect(atLimit.status == 422 && atLimit.error == "invalid_receipt", "\(atLimit.status) \(atLimit.text.prefix(200))")
                    #expect(apple.fake.requests.isEmpty)
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "body_too_large"]) == 2)
                }
            }
        }
    }

    @Test("Apple unreachable: 503 with Retry-After, no event, nothing stored")
    func appleDown() async throws {
        let apple = try ApplePurchases()
        apple.stop()
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let answer = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-d", "transactionId", "800601"))
                    #expect(answer.status == 503)
                    #expect(answer.error == "store_api_unavailable")
                    #expect(answer.retryAfter != nil)
                    #expect(try await harness.records(harness.topics.events).isEmpty)
                    #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "user-d") == nil)
                }
            }
        }
    }

    @Test("refusals: forged chain 401, malformed 400, no token 401, app without key 403, another owner 409, Apple's not-found 422; each counted")
    func refusals() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let api = workers.workers.purchases
                    let forged = try apple.transaction("800701", signer: try AppleTestChain())
                    let cases: [(String, String?, Int, String)] = [
                        (PurchaseCalls.apple(user: "u", "signedTransaction", forged), ApplePurchases.token, 401, "untrusted_chain"),
                        (PurchaseCalls.apple(user: "u", "signedTransaction", "not.a.jws"), ApplePurchases.token, 400, "malformed_jws"),
                        ("{\"app\":", ApplePurchases.token, 400, "malformed_json"),
                        (#"{"app":"com.example","user":"u"}"#, ApplePurchases.token, 400, "missing_field"),
                        (#"{"app":"com.example","user":"u","apple":{"transactionId":"1","receipt":"x"}}"#, ApplePurchases.token, 400, "invalid_field"),
                        (#"{"app":"com.example","user":"u","apple":{"transactionId":"1"},"extra":1}"#, ApplePurchases.token, 400, "invalid_field"),
                        (PurchaseCalls.apple(user: "u", "signedTransaction", forged), nil, 401, "unauthorized"),
                        (PurchaseCalls.apple(user: "u", "transactionId", "1", app: "com.other"), ApplePurchases.token, 403, "unknown_app"),
                        (PurchaseCalls.apple(user: "u", "signedTransaction", try apple.transaction("800702", appAccountToken: "someone-else")),
                         ApplePurchases.token, 409, "already_owned"),
                        (PurchaseCalls.apple(user: "u", "transactionId", "800703"), ApplePurchases.token, 422, "purchase_not_found"),
                        (PurchaseCalls.apple(user: "u", "receipt", "bm90IGEgcmVjZWlwdA=="), ApplePurchases.token, 422, "invalid_receipt"),
                    ]
                    for (body, token, status, reason) in cases {
                        let before = workers.metrics.total("tollgate_api_rejections_total", ["reason": reason])
                        let answer = try await PurchaseCalls.post(api, body, token: token)
                        #expect(answer.status == status && answer.error == reason, "\(body.prefix(80)): \(answer.status) \(answer.text)")
                        #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": reason]) == before + 1, "\(reason) counted once")
                    }
                    #expect(try await harness.records(harness.topics.events).isEmpty)
                }
            }
        }
    }

    static let day = ApplePurchases.day
}
