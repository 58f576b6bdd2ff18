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

/// Account tokens set at Apple (Set App Account Token) once a purchase is linked to a user, against a
/// local App Store Server API answering as Apple documents.
@Suite("Apple account tokens")
struct AppAccountTokenTests {
    static let tokens = [APIToken(ApplePurchases.token)]

    static func setup(_ apple: ApplePurchases) -> AppAccountTokenSetup {
        AppAccountTokenSetup(clients: [ApplePurchases.bundleId: apple.client], retryDelaysMs: [100, 200])
    }

    static func puts(_ apple: ApplePurchases, _ original: String) -> [String] {
        apple.fake.requests.filter { $0.method == "PUT" && $0.target == "/production/inApps/v1/transactions/\(original)/appAccountToken" }
            .compactMap { JSONValue.parse($0.body)?["appAccountToken"]?.string }
    }

    @Test("a linked purchase gets its user's token at Apple, once; Apple's later notifications naming it give the purchase to that user; a UUID user is its own token",
          arguments: Backend.allCases)
    func setAndNamed(backend: Backend) async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        // Apple answers 200 with no body once it took a token.
        for original in ["880001", "880101", "880401"] { apple.fake.store("", at: "/production/inApps/v1/transactions/\(original)/appAccountToken") }
        apple.fake.script("/production/inApps/v1/transactions/880001/appAccountToken",
                          .json(500, #"{"errorCode":5000001,"errorMessage":"An unknown error occurred. Please try again."}"#))
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens,
                                              appAccountTokens: Self.setup(apple)) { workers async throws in
                    try await Self.walk(apple, store: store, harness: harness, workers: workers)
                }
            }
        }
    }

    /// The walk of `setAndNamed`, apart: one closure this long trips the compiler.
    static func walk(_ apple: ApplePurchases, store: EntitlementStore, harness: WorkerHarness, workers: RunningWorkers) async throws {
        let jws = try apple.transaction("880001")
        let posted = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-a", "signedTransaction", jws))
        #expect(posted.status == 200, "\(posted.text)")
        // Apple's first answer is a retryable 500: the call is made again on the next tier.
        try await waitUntil("the token set at Apple") { Self.puts(apple, "880001").count == 2 }
        let token = try #require(Self.puts(apple, "880001").last)
        #expect(token.range(of: #"^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"#, options: .regularExpression) != nil,
                "a version 8 UUID: \(token)")
        #expect(!token.contains("user-a"))
        try await waitUntil("counted") { workers.metrics.total("tollgate_app_account_tokens_total", ["outcome": "set"]) == 1 }

        // The same purchase reported again: the token is not set twice.
        #expect(try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-a", "signedTransaction", jws)).status == 200)
        // The copy signed before the token, replayed for someone else: Apple was told whose it is, so it is refused.
        let replayed = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-b", "signedTransaction", jws))
        let replayedError = replayed.error
        #expect(replayed.status == 409)
        #expect(replayedError == "already_owned")

        // Apple's renewal now names the token (in Apple's upper case): the purchase stays user-a's, not the token's.
        let renewal = try apple.transaction("880001", transactionId: "880002", signedAgoMs: 0, appAccountToken: token.uppercased())
        let delivery = try await apple.chain.source(apps: [ApplePurchases.app])
            .handle(AppleBodies.request(try apple.notification("DID_RENEW", transactionJWS: renewal)))
        let notification = try #require(delivery.events.first)
        #expect(notification.user == token.uppercased())
        try await harness.publish(notification)
        try await waitUntil("the renewal applied") { try await store.hasProcessed(eventId: notification.id) }
        let key = PurchaseKey(source: "apple", app: ApplePurchases.bundleId, environment: "production", subject: "880001")
        let purchase = try await store.purchase(key)
        #expect(purchase?.user == "user-a" && purchase?.lastEventId == notification.id)
        #expect(Self.puts(apple, "880001").count == 2)
        // user-a reports the renewal Apple signed with the token: theirs, not another owner's.
        let again = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-a", "signedTransaction", renewal))
        #expect(again.status == 200, "\(again.text)")
        // Anyone else is refused: Apple names user-a as the owner.
        let someoneElse = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-b", "signedTransaction", renewal))
        let refusal = someoneElse.error
        #expect(someoneElse.status == 409)
        #expect(refusal == "already_owned")

            // A user whose id is a UUID in lower case: that id is the token (no row), and Apple names the user with no lookup.
        let uuidUser = "5d3f1c2a-0b7e-4c61-9a55-2f1d7e8b9c10"
        let other = try apple.transaction("880101", productId: "pro.yearly")
        #expect(try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: uuidUser, "signedTransaction", other)).status == 200)
        try await waitUntil("the UUID user's token set") { Self.puts(apple, "880101") == [uuidUser] }
        // Someone reports their own purchase for the same id in upper case: another user id, so a made token of its
        // own; the lower-case id's purchases stay its own.
        let look = try apple.transaction("880401", productId: "pro.weekly")
        #expect(try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: uuidUser.uppercased(), "signedTransaction", look)).status == 200)
        try await waitUntil("the upper-case id's token set") { Self.puts(apple, "880401").count == 1 }
        let madeForUpper = try #require(Self.puts(apple, "880401").first)
        #expect(madeForUpper != uuidUser && AppAccountTokens.isMade(madeForUpper))
        let named = try apple.transaction("880101", transactionId: "880102", signedAgoMs: 0, appAccountToken: uuidUser, productId: "pro.yearly")
        let renewed = try await apple.chain.source(apps: [ApplePurchases.app])
        .handle(AppleBodies.request(try apple.notification("DID_RENEW", transactionJWS: named)))
        let event = try #require(renewed.events.first)
        try await harness.publish(event)
        try await waitUntil("the UUID user's renewal applied") { try await store.hasProcessed(eventId: event.id) }
        let held = try await store.purchase(PurchaseKey(source: "apple", app: ApplePurchases.bundleId, environment: "production", subject: "880101"))
        #expect(held?.user == uuidUser)
    }

    @Test("Apple refusing for good (a family-shared purchase) is dropped and counted failed; an app without the setting is never called")
    func refusedAndOff() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        apple.fake.script("/production/inApps/v1/transactions/880201/appAccountToken",
                          .json(400, #"{"errorCode":4000185,"errorMessage":"Family transactions are not supported by this endpoint."}"#))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens,
                                              appAccountTokens: Self.setup(apple)) { workers async throws in
                    let jws = try apple.transaction("880201")
                    #expect(try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-f", "signedTransaction", jws)).status == 200)
                    try await waitUntil("counted failed") { workers.metrics.total("tollgate_app_account_tokens_total", ["outcome": "failed"]) == 1 }
                    #expect(Self.puts(apple, "880201").count == 1)
                    #expect(try await store.appAccountTokenRequestsWaiting() == 0)
                }
                try await harness.withWorkers(store: store, purchases: try apple.setup(), apiTokens: Self.tokens) { workers async throws in
                    let jws = try apple.transaction("880301")
                    #expect(try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-n", "signedTransaction", jws)).status == 200)
                    #expect(Self.puts(apple, "880301").isEmpty)
                }
            }
        }
    }

    @Test("the token of a non-UUID user is the same every time, another user's or app's differs, and the store's key makes it")
    func derivation() async throws {
        try await TestDatabases.withStore(.sqlite) { store async throws in
            let tokens = AppAccountTokens(clients: [:], store: store, retryDelaysMs: [1], metrics: MerchantMetrics(factory: RecordingMetrics()),
                                          logger: ApplePurchases.logger)
            let first = try await tokens.token(app: "com.example", user: "user-1")
            #expect(try await tokens.token(app: "com.example", user: "user-1") == first)
            #expect(try await tokens.token(app: "com.example", user: "user-2") != first)
            #expect(try await tokens.token(app: "com.other", user: "user-1") != first)
            #expect(UUID(uuidString: first) != nil)
            let again = AppAccountTokens(clients: [:], store: store, retryDelaysMs: [1], metrics: MerchantMetrics(factory: RecordingMetrics()),
                                         logger: ApplePurchases.logger)
            #expect(try await again.token(app: "com.example", user: "user-1") == first, "another process with the same store")
        }
    }
}
