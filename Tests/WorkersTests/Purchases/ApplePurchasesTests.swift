import Config
import Entitlements
import Events
import Foundation
import Senders
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
@testable import Workers

/// Issue 18: an app reports its Apple purchase with its user (`POST /v1/purchases`); Apple's signed
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
                try await harness.withWorkers(store: store, purchases: apple.setup(), apiTokens: Self.tokens) { workers async throws in
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
                try await harness.withWorkers(store: store, purchases: apple.setup(), apiTokens: Self.tokens) { workers async throws in
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
                try await harness.withWorkers(store: store, purchases: apple.setup(), apiTokens: Self.tokens) { workers async throws in
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
                try await harness.withWorkers(store: store, purchases: apple.setup(ownership: [ApplePurchases.bundleId: .keep]),
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
                try await harness.withWorkers(store: store, purchases: apple.setup(), apiTokens: Self.tokens) { workers async throws in
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
        let receipt = try TestReceipt.make(transactions: [("800401", "800401"), ("800501", "800501")], signer: try AppleTestChain())
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: apple.setup(), apiTokens: Self.tokens) { workers async throws in
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

    @Test("Apple unreachable: 503 with Retry-After, no event, nothing stored")
    func appleDown() async throws {
        let apple = try ApplePurchases()
        apple.stop()
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: apple.setup(), apiTokens: Self.tokens) { workers async throws in
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
                try await harness.withWorkers(store: store, purchases: apple.setup(), apiTokens: Self.tokens) { workers async throws in
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
                        let answer = try await PurchaseCalls.post(api, body, token: token)
                        #expect(answer.status == status && answer.error == reason, "\(body.prefix(80)): \(answer.status) \(answer.text)")
                        #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": reason]) >= 1)
                    }
                    #expect(try await harness.records(harness.topics.events).isEmpty)
                }
            }
        }
    }

    static let day = ApplePurchases.day
}
