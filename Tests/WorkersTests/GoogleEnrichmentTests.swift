import Entitlements
import Events
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Google events take their purchase state from the Play Developer API (a local fake that answers as
/// Google's reference shows).
@Suite("Google enrichment")
struct GoogleEnrichmentTests {
    static func event(_ type: EventType, token: String, product: String? = nil) -> NormalizedEvent {
        NormalizedEvent(id: "google:\(token):\(type.rawValue)", type: type, source: "/google/\(PlayHarness.package)", environment: .production,
                        app: PlayHarness.package, subject: token, occurredAt: "2022-04-22T18:40:00.000Z",
                        receivedAt: "2022-04-22T18:40:01.000Z", product: product, sourceType: "test")
    }

    @Test("a subscription's state, expiry, product, user, replaced purchase and latest order come from subscriptionsv2")
    func subscription() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath("tok-1"))
        let snapshot = try await GooglePlayEnricher(client: h.client).snapshot(for: Self.event(.subscriptionRenewed, token: "tok-1"))
        var expected = PurchaseSnapshot(
            kind: .subscription, state: .active, user: "obfuscated-acc-id-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", product: "premium_monthly",
            expiresAtMs: Timestamp(rfc3339: "2022-05-22T18:39:58.270Z")?.millisecondsSince1970, autoRenew: true,
            linkedPurchaseToken: "kmgpcmjdnlfcbihnhcebkahb.AO-J1OzPreviousPurchaseToken", environment: .production)
        expected.orderId = "GPA.3345-1234-5678-90123"
        #expect(snapshot == expected)
    }

    @Test("a license tester's purchase is a sandbox one: testPurchase in subscriptionsv2, testPurchaseContext in productsv2")
    func testPurchases() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let enricher = GooglePlayEnricher(client: h.client)
        h.fake.store(PlayFixtures.canceledPrepaidSubscription, at: PlayHarness.subscriptionPath("tester"))
        let subscription = try await enricher.snapshot(for: Self.event(.subscriptionAutoRenewDisabled, token: "tester"))
        #expect(subscription?.environment == .sandbox)
        h.fake.store(PlayFixtures.testProduct, at: PlayHarness.productPath("tester-p"))
        let product = try await enricher.snapshot(for: Self.event(.purchaseCompleted, token: "tester-p", product: "coins_100"))
        #expect(product?.environment == .sandbox)
        h.fake.store(PlayFixtures.product, at: PlayHarness.productPath("paid-p"))
        #expect(try await enricher.snapshot(for: Self.event(.purchaseCompleted, token: "paid-p", product: "coins_100"))?.environment == .production)

        // The purchase is kept under the sandbox key, whatever environment the notification claimed.
        let event = Self.event(.purchaseCompleted, token: "tester-p", product: "coins_100")
        #expect(event.environment == .production)
        #expect(Projector.change(for: event, snapshot: product)?.key.environment == "sandbox")
    }

    @Test("410 means ended long ago: expired, not an error; a one-time purchase reads productsv2")
    func goneAndProduct() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.script(PlayHarness.subscriptionPath("old"), .reply(.json(410, #"{"error": {"code": 410, "status": "GONE"}}"#)))
        let enricher = GooglePlayEnricher(client: h.client)
        #expect(try await enricher.snapshot(for: Self.event(.subscriptionExpired, token: "old"))?.state == .expired)
        h.fake.store(PlayFixtures.product, at: PlayHarness.productPath("p-1"))
        let product = try await enricher.snapshot(for: Self.event(.purchaseCompleted, token: "p-1", product: "coins_100"))
        #expect(product?.kind == .oneTime)
        #expect(product?.state == .active)
        // A voided purchase needs no lookup, and other senders never ask.
        #expect(try await enricher.snapshot(for: Self.event(.purchaseRefunded, token: "p-1", product: "coins_100")) == nil)
        var apple = Self.event(.subscriptionRenewed, token: "x")
        apple.source = "/apple/com.example"
        #expect(try await enricher.snapshot(for: apple) == nil)
    }

    @Test("a quantity-based partial refund Google lists leaves the units productsv2 still counts; a full one, or one leaving none, refunds")
    func partialRefund() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        h.fake.storeVoided(["coins-3", "coins-1", "coins-0"].map { GoogleForgedClaimsTests.voided($0, atMs: nowMs - 60_000) })
        h.fake.store(PlayFixtures.productV2(quantity: 3, refundable: 2), at: PlayHarness.productPath("coins-3"))
        h.fake.store(PlayFixtures.productV2(quantity: 1, refundable: 0), at: PlayHarness.productPath("coins-1"))
        // Google leaves a zero out: after a confirmed void, no refundableQuantity is none held.
        h.fake.store(PlayFixtures.productV2(quantity: 2).replacingOccurrences(of: #""refundableQuantity": 2,"#, with: ""),
                     at: PlayHarness.productPath("coins-0"))
        var enricher = GooglePlayEnricher(client: h.client)
        enricher.now = { nowMs }
        func voided(_ token: String, partial: Bool) -> NormalizedEvent {
            var event = Self.event(.purchaseRefunded, token: token)
            event.occurredAt = Timestamp(millisecondsSince1970: nowMs - 30_000).rfc3339
            event.receivedAt = event.occurredAt
            event.reason = partial ? "quantity_based_partial_refund" : "full_refund"
            return event
        }
        #expect(try await enricher.enrich(voided("coins-3", partial: true))
                == .state(PurchaseSnapshot(kind: .oneTime, state: .active, environment: .production, quantity: 2)))
        #expect(try await enricher.enrich(voided("coins-1", partial: true)) == .state(PurchaseSnapshot(kind: nil, state: .refunded)))
        #expect(try await enricher.enrich(voided("coins-0", partial: true)) == .state(PurchaseSnapshot(kind: nil, state: .refunded)))
        #expect(try await enricher.enrich(voided("coins-3", partial: false)) == .state(PurchaseSnapshot(kind: nil, state: .refunded)))
        // Applied: two of three units held, still entitled.
        let change = try #require(Projector.change(for: voided("coins-3", partial: true), snapshot: PurchaseSnapshot(kind: .oneTime, state: .active, quantity: 2)))
        let stored = Purchase(key: change.key, kind: .oneTime, state: .active, user: "u", product: "coins_100", quantity: 3,
                              lastEventAtMs: nowMs - 120_000, lastEventId: "earlier", lastEventType: "purchase.completed")
        let next = try #require(change.update(stored))
        #expect(next.state == .active && next.quantity == 2)
    }

    @Test("a failed lookup is a transient failure (a retry), never a revocation")
    func failure() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.script(PlayHarness.subscriptionPath("tok-2"), .reply(.json(503, #"{"error": {"code": 503, "status": "UNAVAILABLE"}}"#)))
        do {
            _ = try await GooglePlayEnricher(client: h.client).snapshot(for: Self.event(.subscriptionRevoked, token: "tok-2"))
            Issue.record("a 503 must fail the lookup")
        } catch {
            #expect(error.isTransient)
            #expect(error.type == "tollgate.PlayAPIError")
        }
    }
}
