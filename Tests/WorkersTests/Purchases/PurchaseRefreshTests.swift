import Config
@testable import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Store
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Purchases re-read from their store: `POST /v1/purchases/{purchase}/refresh` and the at-risk refresh,
/// against a local App Store Server API answering as Apple documents.
@Suite("Purchase refresh")
struct PurchaseRefreshTests {
    static let tokens = [APIToken(ApplePurchases.token),
                         APIToken("client-token", kind: .client),
                         APIToken("other-app-token", apps: ["com.other"])]
    static let minute: Int64 = 60_000

    static func refresh(_ workers: RunningWorkers, _ id: String, token: String? = ApplePurchases.token) async throws -> PurchaseCalls.Answer {
        var head = HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: "/v1/purchases/\(id)/refresh")
        if let token { head.headerFields[.authorization] = "Bearer \(token)" }
        let response = try await workers.workers.refresh.routes.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer())))
        let collected = PurchaseCalls.CollectedBody()
        try await response.body.write(collected)
        return PurchaseCalls.Answer(status: response.status.code, retryAfter: response.headers[.retryAfter],
                                    text: String(decoding: collected.bytes.withLock { $0 }, as: UTF8.self))
    }

    /// Apple's answers for `original`: its transaction, and its subscription status with `latest`.
    static func answer(_ apple: ApplePurchases, original: String, latest: String, status: Int = 1) throws {
        apple.fake.store(#"{"signedTransactionInfo":"\#(latest)"}"#, at: "/production/inApps/v1/transactions/\(original)")
        let renewal = try apple.chain.sign(AppleBodies.renewal(environment: "Production", originalTransactionId: original,
                                                               signedDate: Timestamp.now.millisecondsSince1970))
        apple.fake.store(ApplePurchases.statuses(original: original, status: status, transactionJWS: latest, renewalJWS: renewal),
                         at: "/production/inApps/v1/subscriptions/\(original)")
    }

    @Test("a renewal whose notification was lost is recovered by the at-risk refresh; a purchase not at risk is not read; each once per spacing",
          arguments: Backend.allCases)
    func lostRenewalRecovered(backend: Backend) async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    // Ending in 20 minutes: Apple renewed it, but the DID_RENEW notification never came.
                    let ending = try apple.transaction("870001", expiresInMs: 20 * Self.minute)
                    let safe = try apple.transaction("870101", expiresInMs: 20 * ApplePurchases.day, productId: "pro.yearly")
                    for jws in [ending, safe] {
                        let posted = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-r", "signedTransaction", jws))
                        #expect(posted.status == 200, "\(posted.text)")
                    }
                    let renewed = try apple.transaction("870001", transactionId: "870002", signedAgoMs: 0, expiresInMs: 30 * ApplePurchases.day)
                    try Self.answer(apple, original: "870001", latest: renewed)
                    let key = PurchaseKey(source: "apple", app: ApplePurchases.bundleId, environment: "production", subject: "870001")
                    let before = try #require(try await store.purchase(key)?.expiresAtMs)

                    let job = AtRiskRefresh(refresher: workers.workers.refresh.refresher, store: store,
                                            quota: StoreQuota(playQueriesPerMinute: 1_000, appleRequestsPerSecond: 10), interval: .seconds(60),
                                            spacingMs: 15 * Self.minute, metrics: MerchantMetrics(factory: workers.metrics),
                                            logger: ApplePurchases.logger)
                    #expect(try await job.pass() == .idle)
                    // The pass publishes and goes on; the projection applies the renewal when it gets to it.
                    try await waitUntil("the renewal applied") { (try await store.purchase(key)?.expiresAtMs ?? 0) > before }
                    let after = try #require(try await store.purchase(key))
                    #expect(after.expiresAtMs ?? 0 > before + 29 * ApplePurchases.day, "the renewal's end is the purchase's")
                    #expect(after.state == .active && after.user == "user-r")
                    #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "user-r")?.first { $0.product == "pro.monthly" }?
                        .expiresAtMs == after.expiresAtMs)
                    // Only the purchase at risk was read: its transaction, then its status.
                    #expect(apple.fake.requests.map(\.target) == ["/production/inApps/v1/transactions/870001",
                                                                  "/production/inApps/v1/subscriptions/870001"])
                    #expect(workers.metrics.total("tollgate_purchase_refreshes_total",
                                                  ["store": "apple", "trigger": "at_risk", "outcome": "changed"]) == 1)
                    // Renewed for a month, it is no longer at risk; and nothing is read twice within the spacing.
                    #expect(try await job.pass() == .idle)
                    #expect(apple.fake.requests.count == 2)
                }
            }
        }
    }

    @Test("the at-risk refresh spends at most its share of the store's quota; what it cannot take waits for a later pass")
    func staysInsideQuota() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let originals = (0..<3).map { "87020\($0)" }
                    for original in originals {
                        let jws = try apple.transaction(original, expiresInMs: 10 * Self.minute, productId: "pro.\(original)")
                        #expect(try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-q", "signedTransaction", jws)).status == 200)
                        try Self.answer(apple, original: original, latest: jws)
                    }
                    let job = AtRiskRefresh(refresher: workers.workers.refresh.refresher, store: store,
                                            quota: StoreQuota(playQueriesPerMinute: 1_000, appleRequestsPerSecond: 1), interval: .seconds(60),
                                            spacingMs: 15 * Self.minute, metrics: MerchantMetrics(factory: workers.metrics),
                                            logger: ApplePurchases.logger)
                    _ = try await job.pass()
                    // Apple's share at one a second holds one read's worst case (three calls) at once: one subscription
                    // read (its transaction and its statuses), the other two left for later.
                    #expect(apple.fake.requests.count == 2)
                    #expect(workers.metrics.total("tollgate_purchase_refresh_deferred_total", [:]) == 2)
                    #expect(workers.metrics.total("tollgate_purchase_refreshes_total", ["store": "apple", "trigger": "at_risk"]) == 1)
                }
            }
        }
    }

    @Test("POST /v1/purchases/{purchase}/refresh: the server credential re-reads and applies a refund; unchanged publishes nothing; others are refused; each read is in the purchase's story")
    func refreshRoute() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens,
                                              console: try ConsoleActionTests.setup()) { workers async throws in
                    let jws = try apple.transaction("870301")
                    let posted = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-s", "signedTransaction", jws))
                    let id = try #require(posted.body?.purchases?.first?.purchaseId)
                    try Self.answer(apple, original: "870301", latest: jws)
                    // The first read adds what only the status says (its renewal info); the second finds nothing new.
                    let first = try await Self.refresh(workers, id)
                    #expect(first.status == 200 && first.text.contains(#""changed":true"#), "\(first.text)")
                    let same = try await Self.refresh(workers, id)
                    #expect(same.status == 200, "\(same.text)")
                    #expect(same.text.contains(#""changed":false"#) && same.body?.eventIds == [])
                    #expect(!same.text.contains("870301"), "the answer names the purchase by its id only")

                    // Refunded at Apple, and the REFUND notification lost.
                    let refunded = try apple.transaction("870301", signedAgoMs: 0, revokedAgoMs: 1_000)
                    try Self.answer(apple, original: "870301", latest: refunded, status: 5)
                    let events = try await harness.records(harness.topics.events).count
                    let changed = try await Self.refresh(workers, id)
                    #expect(changed.status == 200, "\(changed.text)")
                    #expect(changed.text.contains(#""changed":true"#) && changed.body?.eventIds?.count == 1)
                    let key = PurchaseKey(source: "apple", app: ApplePurchases.bundleId, environment: "production", subject: "870301")
                    #expect(try await store.purchase(key)?.state == .revoked)
                    #expect(try await harness.records(harness.topics.events).count == events + 1)

                    let calls = apple.fake.requests.count
                    let client = try await Self.refresh(workers, id, token: "client-token")
                    #expect(client.status == 403 && client.error == "server_credential_required")
                    let otherApp = try await Self.refresh(workers, id, token: "other-app-token")
                    #expect(otherApp.status == 404 && otherApp.error == "unknown_purchase", "another app's credential learns nothing of it")
                    let unknown = try await Self.refresh(workers, "pur_AAAAAAAAAAAAAAAAAAAAAA")
                    #expect(unknown.status == 404 && unknown.error == "unknown_purchase")
                    let malformed = try await Self.refresh(workers, "870301")
                    #expect(malformed.status == 404 && malformed.error == "unknown_purchase")
                    let anonymous = try await Self.refresh(workers, id, token: nil)
                    #expect(anonymous.status == 401)
                    #expect(apple.fake.requests.count == calls, "no refused call reached Apple")

                    // Each read from Apple, in the purchase's story for the console.
                    let made = try await store.storeCalls(key)
                    #expect(made.map(\.outcome) == ["changed", "unchanged", "changed"] && made.allSatisfy { $0.call == "refresh" && $0.detail == "asked by api" })
                    var operatorBrowser = ConsoleActionTests.Browser(routes: workers.workers.routes)
                    try await operatorBrowser.signIn(ConsoleActionTests.bob)
                    let page = try await operatorBrowser.call(.get, "/console/purchases/\(id)").body
                    #expect(page.contains("Calls to its store") && page.contains("<code>refresh</code>") && page.contains("asked by api"))
                }
            }
        }
    }

    @Test("a purchase written before ids were kept is given its id at open, and is found by it", arguments: Backend.allCases)
    func idsForOlderPurchases(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let key = PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "870401")
            let change = PurchaseChange(eventId: "apple:older", key: key) { _ in
                Purchase(key: key, kind: .oneTime, state: .active, user: "user-o", product: "lifetime", lastEventAtMs: 1_000,
                         lastEventId: "apple:older", lastEventType: "purchase.completed")
            }
            _ = try await store.apply([change], nowMs: 1_000)
            let id = store.purchaseIds.id(of: key)
            #expect(try await store.purchase(id: id)?.key == key)
            _ = try await store.database.transaction { connection throws(StoreError) in
                try connection.execute("UPDATE purchases SET purchase_id = NULL", [])
            }
            #expect(try await store.purchase(id: id) == nil)
            #expect(try await store.namePurchases() == 1)
            #expect(try await store.purchase(id: id)?.user == "user-o")
            #expect(try await store.namePurchases() == 0)
        }
    }

    @Test("the at-risk set: production before sandbox, each once per spacing, one the store no longer knows left until an event moves it",
          arguments: Backend.allCases)
    func atRiskOrder(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let nowMs: Int64 = 1_800_000_000_000
            func key(_ environment: String, _ subject: String) -> PurchaseKey {
                PurchaseKey(source: "apple", app: "com.example", environment: environment, subject: subject)
            }
            func change(_ key: PurchaseKey, state: PurchaseState, eventAtMs: Int64) -> PurchaseChange {
                PurchaseChange(eventId: "\(key.subject)-\(eventAtMs)", key: key) { _ in
                    Purchase(key: key, kind: .subscription, state: state, user: "u", product: "p", expiresAtMs: nowMs + 600_000,
                             lastEventAtMs: eventAtMs, lastEventId: "\(key.subject)-\(eventAtMs)", lastEventType: "subscription.renewed")
                }
            }
            let sandbox = key("sandbox", "s-1"), production = key("production", "p-1"), retrying = key("production", "p-2")
            _ = try await store.apply([change(sandbox, state: .active, eventAtMs: 1), change(production, state: .active, eventAtMs: 1),
                                       change(retrying, state: .billingRetry, eventAtMs: 1)], nowMs: nowMs)
            func due() async throws -> [String] {
                try await store.purchasesAtRisk(sources: ["apple"], nowMs: nowMs, aheadMs: 3_600_000, behindMs: 86_400_000,
                                                spacingMs: 900_000, limit: 10).map(\.key.subject)
            }
            #expect(try await due().last == "s-1", "sandbox after production")
            #expect(Set(try await due().prefix(2)) == ["p-1", "p-2"])
            try await store.recordRefresh(production, outcome: "unchanged", nowMs: nowMs)
            try await store.recordRefresh(retrying, outcome: "not_found", nowMs: nowMs - 1_000_000)
            // p-1 was read now: not again within the spacing. p-2's store no longer knows it: left alone.
            #expect(try await due() == ["s-1"])
            // An event moves p-2: it is at risk again.
            _ = try await store.apply([change(retrying, state: .billingRetry, eventAtMs: nowMs - 10)], nowMs: nowMs)
            #expect(try await due() == ["p-2", "s-1"])
        }
    }
}
