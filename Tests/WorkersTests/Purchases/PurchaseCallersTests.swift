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
@testable import Workers

/// Who may report a purchase, and for which app (docs/security.md, "Purchases apps report"): a credential
/// limited to other apps, the validator key out of its place, a bearer token on the plugin's route, a
/// signed transaction of another configured app; and the answer when the purchase is not applied in time.
@Suite("Purchases API: who may report purchases")
struct PurchaseCallersTests {
    static let otherApp = AppleSettings.App(bundleId: "com.example.other", appAppleId: 5678, environments: ["Production", "Sandbox"])
    static let limited = "limited-to-other-app-0001"
    static let tokens = [APIToken(ApplePurchases.token), APIToken(limited, apps: [otherApp.bundleId])]

    @Test("an app-limited token is 403 app_not_allowed on both routes; the validator key is no bearer token; a server bearer token validates; another configured app's signed transaction is 422")
    func credentialsAndApps() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        var setup = try apple.setup(otherApps: [Self.otherApp])
        setup.settings.validatorKeys = [ApplePurchases.bundleId: ValidateAPITests.key]
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                // A small store-call bucket, to see the validator key spend it.
                let merchantAPI = MerchantAPISetup(clientStoreCallsPerSecond: 1, clientStoreCallBurst: 2)
                try await harness.withWorkers(store: store, purchases: setup, apiTokens: Self.tokens, merchantAPI: merchantAPI) { workers async throws in
                    let purchases = workers.workers.purchases, validate = workers.workers.validate
                    let jws = try apple.transaction("870001")

                    // A credential limited to another app, on either route.
                    let limited = try await PurchaseCalls.post(purchases, PurchaseCalls.apple(user: "user-c", "signedTransaction", jws), token: Self.limited)
                    #expect(limited.status == 403 && limited.error == "app_not_allowed", "\(limited.text)")
                    let limitedValidate = try await ValidateAPITests.validate(validate, query: "?appName=\(ApplePurchases.bundleId)",
                                                                              ValidateAPITests.signedBody(jws, user: "user-c"), bearer: Self.limited)
                    #expect(limitedValidate.status == 403 && limitedValidate.json?["error"]?.string == "app_not_allowed"
                                && limitedValidate.json?["code"]?.int64 == 6778007, "\(limitedValidate.text)")

                    // The validator key is public (it is in the app) and belongs in the validator URL only.
                    let keyAsBearer = try await PurchaseCalls.post(purchases, PurchaseCalls.apple(user: "user-c", "signedTransaction", jws),
                                                                   token: ValidateAPITests.key)
                    #expect(keyAsBearer.status == 401 && keyAsBearer.error == "unauthorized", "\(keyAsBearer.text)")
                    let keyAsBearerValidate = try await ValidateAPITests.validate(validate, query: "?appName=\(ApplePurchases.bundleId)",
                                                                                  ValidateAPITests.signedBody(jws, user: "user-c"), bearer: ValidateAPITests.key)
                    #expect(keyAsBearerValidate.status == 401 && keyAsBearerValidate.json?["error"]?.string == "unauthorized", "\(keyAsBearerValidate.text)")

                    // Another configured app's transaction, posted as this app's: the store's word names the app.
                    let otherJWS = try apple.transaction("870002", bundleId: Self.otherApp.bundleId)
                    let crossApp = try await PurchaseCalls.post(purchases, PurchaseCalls.apple(user: "user-c", "signedTransaction", otherJWS))
                    #expect(crossApp.status == 422 && crossApp.error == "purchase_not_found", "\(crossApp.text)")
                    #expect(try await harness.records(harness.topics.events).isEmpty, "nothing published for a refused claim")
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "app_not_allowed"]) == 2)
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "unauthorized"]) == 2)
                    #expect(workers.metrics.total("tollgate_api_rejections_total", ["reason": "purchase_not_found"]) == 1)

                    // A merchant's backend may use /v1/validate with its server bearer token: its answer is the plugin's.
                    let backend = try await ValidateAPITests.validate(validate, query: "?appName=\(ApplePurchases.bundleId)",
                                                                      ValidateAPITests.signedBody(jws, user: "user-c"), bearer: ApplePurchases.token)
                    #expect(backend.status == 200 && backend.json?["ok"]?.bool == true, "\(backend.text)")
                    #expect(ValidateAPITests.pluginTakes(backend.json))
                    #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "user-c")?.map(\.product) == ["pro.monthly"])

                    // The validator key is public: its claims that call Apple (a receipt) spend the client store-call
                    // bucket (burst 2 here), then 429; the backend's bearer token goes on.
                    let receipt = ValidateAPITests.appleBody(receipt: "bm90IGEgcmVjZWlwdA==", user: "user-c")
                    for _ in 0..<2 {
                        let answer = try await ValidateAPITests.validate(validate, query: ValidateAPITests.query + "&errorStatus=http", receipt)
                        #expect(answer.status == 422 && answer.json?["error"]?.string == "invalid_receipt", "\(answer.text)")
                    }
                    let spent = try await ValidateAPITests.validate(validate, query: ValidateAPITests.query + "&errorStatus=http", receipt)
                    #expect(spent.status == 429 && spent.json?["error"]?.string == "rate_limited", "\(spent.text)")
                    let server = try await ValidateAPITests.validate(validate, query: "?appName=\(ApplePurchases.bundleId)&errorStatus=http", receipt,
                                                                     bearer: ApplePurchases.token)
                    #expect(server.status == 422, "\(server.text)")
                }
            }
        }
    }

    @Test("past purchases.waitMs the answer is 202 with the event ids, nothing entitled yet; once the store can write, the purchase applies")
    func notAppliedInTime() async throws {
        let apple = try ApplePurchases()
        defer { apple.stop() }
        try await TestDatabases.withURL(.sqlite) { url in
            try await withStore(url: url + "?busy_timeout_ms=100") { store in
                try await WorkerHarness.with { harness async throws in
                    try await harness.withWorkers(store: store, purchases: try apple.setup(waitMs: 300), apiTokens: [APIToken(ApplePurchases.token)]) { workers async throws in
                        // A first purchase, applied before the test goes on (its answer makes the purchase ids' key,
                        // which needs a write; the workers' first consumer-group join may outlast waitMs).
                        let first = try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-w", "signedTransaction",
                                                                                                               try apple.transaction("870100")))
                        let firstIds = try #require(first.body?.eventIds, "\(first.text)")
                        #expect(first.body?.purchases?.count == 1, "\(first.text)")
                        for id in firstIds { try await waitUntil("the first purchase applied") { try await store.hasProcessed(eventId: id) } }
                        let pendingBefore = workers.metrics.total("tollgate_purchases_total", ["store": "apple", "outcome": "pending"])
                        let jws = try apple.transaction("870101", productId: "pro.yearly")
                        // Another writer holds the database: the workers cannot apply the event while it does.
                        let pending = try await SQLiteWriteLock.holding(url) { _ in
                            try await PurchaseCalls.post(workers.workers.purchases, PurchaseCalls.apple(user: "user-w", "signedTransaction", jws))
                        }
                        #expect(pending.status == 202, "\(pending.text)")
                        let eventIds = try #require(pending.body?.eventIds)
                        #expect(eventIds.count == 1 && eventIds[0].hasPrefix("apple:purchase:"))
                        // The purchase it proved, by its opaque id; no entitlements until applied.
                        #expect(pending.body?.purchases?.map(\.product) == ["pro.yearly"], "\(pending.text)")
                        #expect(pending.body?.entitlements == nil, "\(pending.text)")
                        #expect(workers.metrics.total("tollgate_purchases_total", ["store": "apple", "outcome": "pending"]) == pendingBefore + 1)
                        try await waitUntil("the reported purchase applied") { try await store.hasProcessed(eventId: eventIds[0]) }
                        #expect(try await store.entitlements(app: ApplePurchases.bundleId, user: "user-w")?.map(\.product).sorted() == ["pro.monthly", "pro.yearly"])
                    }
                }
            }
        }
    }
}
