import Config
import Entitlements
import Events
import Foundation
import StoreTestSupport
import TestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A purchase token posted to `POST /v1/purchases` is checked with a local
/// Google answering as its reference shows, entitles the user once the workers applied it, and is
/// acknowledged exactly once; Google down gives 503 with `Retry-After` and publishes nothing.
@Suite("Purchases API: Google")
struct GooglePurchasesEndToEndTests {
    static let token = "e2e-token.AO-J1OzSecretPurchaseToken"
    static let tokens = [APIToken(ApplePurchases.token)]

    static func setup(_ h: PlayHarness, store: EntitlementStore, reads: PlayPurchaseReads? = nil) -> (EntitlementWorkers.PurchasesSetup, RecordingMetrics) {
        let metrics = RecordingMetrics()
        let acknowledger = PlayAcknowledger(client: h.client, store: store, metrics: MerchantMetrics(factory: metrics), logger: ApplePurchases.logger)
        // Long enough for the workers' first consumer-group join, with other tests running beside this one
        // (the answer comes as soon as the event is applied).
        var settings = PurchaseSettings()
        settings.waitMs = 60_000
        return (EntitlementWorkers.PurchasesSetup(verifiers: [GooglePurchaseVerifier(client: h.client, packages: [PlayHarness.package], reads: reads)],
                                                  settings: settings, acknowledger: acknowledger), metrics)
    }

    static func body(user: String, product: String, token: String = token) -> String {
        #"{"app":"\#(PlayHarness.package)","user":"\#(user)","google":{"packageName":"\#(PlayHarness.package)","productId":"\#(product)","purchaseToken":"\#(token)"}}"#
    }

    /// The acknowledge call's path for a subscription (`purchases.subscriptions.acknowledge`, v1's path).
    static func subscriptionAcknowledgePath(_ product: String, _ token: String) -> String {
        "/androidpublisher/v3/applications/\(PlayHarness.package)/purchases/subscriptions/\(product)/tokens/\(token)"
    }

    @Test("a subscription token entitles its user and is acknowledged once; the same post again publishes and acknowledges nothing",
          arguments: Backend.allCases)
    func entitlesAndAcknowledgesOnce(backend: Backend) async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: nowMs - 60_000), at: PlayHarness.subscriptionPath(Self.token))
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                // The verifier and the enricher share their reads, as `GooglePurchases.make` composes them.
                let enricher = GooglePlayEnricher(client: h.client)
                let (setup, metrics) = Self.setup(h, store: store, reads: enricher.reads)
                try await harness.withWorkers(store: store, playAPI: enricher, purchases: setup,
                                              apiTokens: Self.tokens) { workers async throws in
                    let first = try await PurchaseCalls.post(workers.workers.purchases, Self.body(user: "user-g", product: "premium_monthly"))
                    #expect(first.status == 200, "\(first.text)")
                    // One read of the purchase: the verifier's, which the projection of its event took.
                    let subscriptionReads = h.fake.apiTargets.filter { $0.hasSuffix("/subscriptionsv2/tokens/\(Self.token)") }
                    #expect(subscriptionReads.count == 1, "\(h.fake.apiTargets)")
                    #expect(first.body?.entitlements?.map(\.product) == ["premium_monthly"])
                    #expect(first.body?.purchases?.first?.kind == "subscription")
                    let eventIds = try #require(first.body?.eventIds)
                    #expect(eventIds.count == 1 && eventIds[0].hasPrefix("google:purchase:"))
                    #expect(h.fake.acknowledged == ["/androidpublisher/v3/applications/\(PlayHarness.package)/purchases/subscriptions/premium_monthly/tokens/\(Self.token)"])
                    #expect(metrics.total("tollgate_worker_play_acknowledgements_total", ["outcome": "acknowledged"]) == 1)
                    let purchase = try await store.purchase(PurchaseKey(source: "google", app: PlayHarness.package, environment: "production",
                                                                        subject: Self.token))
                    #expect(purchase?.user == "user-g")
                    #expect(purchase?.state == .active)

                    let again = try await PurchaseCalls.post(workers.workers.purchases, Self.body(user: "user-g", product: "premium_monthly"))
                    #expect(again.status == 200, "\(again.text)")
                    #expect(again.body?.eventIds == [])
                    #expect(again.body?.entitlements?.map(\.product) == ["premium_monthly"])
                    #expect(h.fake.acknowledged.count == 1)
                    #expect(try await store.pendingPlayAcknowledgements().isEmpty)
                }
            }
        }
    }

    @Test("Google down: 503 store_api_unavailable with Retry-After, no event, nothing to acknowledge; an unknown token 422")
    func googleDown() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let (setup, metrics) = Self.setup(h, store: store)
                try await harness.withWorkers(store: store, purchases: setup, apiTokens: Self.tokens) { workers async throws in
                    let unknown = try await PurchaseCalls.post(workers.workers.purchases, Self.body(user: "user-g", product: "lifetime_unlock"))
                    #expect(unknown.status == 422)
                    #expect(unknown.error == "purchase_not_found")
                    #expect(!unknown.text.contains(Self.token))

                    h.fake.script(PlayHarness.subscriptionPath(Self.token),
                                  .reply(.json(503, #"{"error": {"code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}}"#)))
                    let down = try await PurchaseCalls.post(workers.workers.purchases, Self.body(user: "user-g", product: "premium_monthly"))
                    #expect(down.status == 503)
                    #expect(down.error == "store_api_unavailable")
                    #expect(down.retryAfter == "30")
                    #expect(!down.text.contains(Self.token))
                    #expect(try await harness.records(harness.topics.events).isEmpty)
                    #expect(h.fake.acknowledged.isEmpty)
                    #expect(metrics.total("tollgate_worker_play_acknowledgements_total") == 0)
                }
            }
        }
    }

    @Test("unpaid purchases entitle nothing and owe no acknowledgement: a pending subscription, a pending and a canceled one-time purchase; once paid, the same post entitles and acknowledges")
    func unpaidPurchases() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: nowMs - 60_000, state: "SUBSCRIPTION_STATE_PENDING"),
                     at: PlayHarness.subscriptionPath("pending-subscription"))
        h.fake.store(GooglePurchaseVerifierTests.newProduct(purchaseMs: nowMs - 60_000, purchaseState: 2), at: PlayHarness.productPath("pending-product"))
        h.fake.store(GooglePurchaseVerifierTests.newProduct(purchaseMs: nowMs - 60_000, purchaseState: 1), at: PlayHarness.productPath("canceled-product"))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let enricher = GooglePlayEnricher(client: h.client)
                let (setup, metrics) = Self.setup(h, store: store, reads: enricher.reads)
                try await harness.withWorkers(store: store, playAPI: enricher, purchases: setup, apiTokens: Self.tokens) { workers async throws in
                    for (token, product, type, state) in [("pending-subscription", "premium_monthly", "subscription.updated", PurchaseState.pending),
                                                          ("pending-product", "lifetime_unlock", "purchase.pending", .pending),
                                                          ("canceled-product", "lifetime_unlock", "purchase.canceled", .canceled)] {
                        let answer = try await PurchaseCalls.post(workers.workers.purchases, Self.body(user: "user-u", product: product, token: token))
                        #expect(answer.status == 200, "\(token): \(answer.text)")
                        #expect(answer.body?.purchases?.map(\.type) == [type], "\(token): \(answer.text)")
                        #expect(answer.body?.entitlements?.isEmpty == true, "\(token): \(answer.text)")
                        let purchase = try await store.purchase(PurchaseKey(source: "google", app: PlayHarness.package, environment: "production", subject: token))
                        #expect(purchase?.state == state, "\(token): \(String(describing: purchase?.state))")
                        #expect(purchase?.user == "user-u")
                    }
                    // Google refuses to acknowledge a purchase not paid for: none was asked, none is queued.
                    #expect(h.fake.acknowledgeCalls.isEmpty, "\(h.fake.acknowledgeCalls)")
                    #expect(try await store.pendingPlayAcknowledgements().isEmpty)
                    #expect(metrics.total("tollgate_worker_play_acknowledgements_total") == 0)

                    // The pending purchase is paid: the same post now entitles, and Google is told.
                    h.fake.store(GooglePurchaseVerifierTests.newProduct(purchaseMs: nowMs - 60_000), at: PlayHarness.productPath("pending-product"))
                    let paid = try await PurchaseCalls.post(workers.workers.purchases, Self.body(user: "user-u", product: "lifetime_unlock", token: "pending-product"))
                    #expect(paid.status == 200, "\(paid.text)")
                    #expect(paid.body?.purchases?.map(\.type) == ["purchase.completed"])
                    #expect(paid.body?.entitlements?.map(\.product) == ["lifetime_unlock"])
                    #expect(h.fake.acknowledged == [PlayHarness.productAckPath("lifetime_unlock", "pending-product")])
                }
            }
        }
    }

    @Test("an unchanged post of a purchase Google still reports unacknowledged acknowledges it: the first acknowledgement was refused for good")
    func unchangedPostAcknowledgesWhatIsOwed() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: nowMs - 60_000), at: PlayHarness.subscriptionPath(Self.token))
        let acknowledgePath = Self.subscriptionAcknowledgePath("premium_monthly", Self.token)
        h.fake.script(acknowledgePath + ":acknowledge",
                      .reply(.json(400, #"{"error": {"code": 400, "message": "Invalid Value", "status": "INVALID_ARGUMENT"}}"#)))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let enricher = GooglePlayEnricher(client: h.client)
                let (setup, metrics) = Self.setup(h, store: store, reads: enricher.reads)
                try await harness.withWorkers(store: store, playAPI: enricher, purchases: setup, apiTokens: Self.tokens) { workers async throws in
                    let first = try await PurchaseCalls.post(workers.workers.purchases, Self.body(user: "user-g", product: "premium_monthly"))
                    #expect(first.status == 200, "\(first.text)")
                    #expect(first.body?.entitlements?.map(\.product) == ["premium_monthly"])
                    // Refused for good: not queued, so only another post can still deliver it.
                    #expect(metrics.total("tollgate_worker_play_acknowledgements_total", ["outcome": "failed"]) == 1)
                    #expect(h.fake.acknowledged.isEmpty)
                    #expect(try await store.pendingPlayAcknowledgements().isEmpty)

                    let again = try await PurchaseCalls.post(workers.workers.purchases, Self.body(user: "user-g", product: "premium_monthly"))
                    #expect(again.status == 200, "\(again.text)")
                    #expect(again.body?.eventIds == [], "nothing changed, nothing published")
                    #expect(h.fake.acknowledged == [acknowledgePath])
                    #expect(metrics.total("tollgate_worker_play_acknowledgements_total", ["outcome": "acknowledged"]) == 1)
                }
            }
        }
    }
}
