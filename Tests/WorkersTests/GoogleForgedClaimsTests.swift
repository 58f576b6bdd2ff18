import TestSupport
import Entitlements
import Events
import Logging
import StoreTestSupport
import Testing
@testable import Kafka
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A Google push token is not bound to its message, so whoever holds one valid
/// token can post any notification. With the Play Developer API configured, an event changes a
/// purchase only to the state Google reports (the local fake answers as Google's reference shows).
@Suite("Google: the Play API over forgeable notifications")
struct GoogleForgedClaimsTests {
    static func event(_ id: String, _ type: EventType, token: String, product: String? = nil, occurredAt: String,
                      receivedAt: String = Timestamp.now.rfc3339) -> NormalizedEvent {
        NormalizedEvent(id: "google:\(id)", type: type, source: "/google/\(PlayHarness.package)", environment: .production,
                        app: PlayHarness.package, subject: token, occurredAt: occurredAt, receivedAt: receivedAt, product: product,
                        sourceType: "test")
    }

    static func voided(_ token: String, atMs: Int64) -> String { FakeGooglePlay.voidedPurchase(token, atMs: atMs) }

    static func record(_ event: NormalizedEvent, offset: Int64) -> KafkaRecord {
        KafkaRecord(topic: "tollgate.events", partition: 0, offset: offset, key: Array(event.subject.utf8),
                    value: EventCoding.encode(event), headers: [], timestampMs: nil)
    }

    @Test("a voided purchase counts only when purchases.voidedpurchases.list lists its token, read page by page")
    func voidedListed() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let now = Timestamp.now.millisecondsSince1970
        h.fake.setVoidedPageSize(2)
        h.fake.storeVoided((1...5).map { Self.voided("other-\($0)", atMs: now - 3_600_000) } + [Self.voided("voided-1", atMs: now - 60_000)])
        let enricher = GooglePlayEnricher(client: h.client)
        let occurred = Timestamp(millisecondsSince1970: now - 60_000).rfc3339
        #expect(try await enricher.enrich(Self.event("v1", .purchaseRefunded, token: "voided-1", occurredAt: occurred))
                == .state(PurchaseSnapshot(kind: nil, state: .refunded)))
        #expect(try await enricher.enrich(Self.event("v2", .purchaseRefunded, token: "someone-else", occurredAt: occurred)) == .unconfirmed(nil))
        // A void names its order: the listed token's void of another order (an old renewal) does not count.
        var otherOrder = Self.event("v3", .purchaseRefunded, token: "voided-1", occurredAt: occurred)
        otherOrder.transaction = NormalizedEvent.Transaction(id: "GPA.3399-an-older-order")
        #expect(try await enricher.enrich(otherOrder) == .unconfirmed(nil))
        var sameOrder = Self.event("v4", .purchaseRefunded, token: "voided-1", occurredAt: occurred)
        sameOrder.transaction = NormalizedEvent.Transaction(id: "GPA.3399-voided-1")
        #expect(try await enricher.enrich(sameOrder) == .state(PurchaseSnapshot(kind: nil, state: .refunded)))
        let asked = h.fake.apiTargets.filter { $0.contains("/purchases/voidedpurchases?") }
        // Three pages for each: the listed token is on the last page, the forged one and the other order on none.
        #expect(asked.count == 12)
        #expect(asked.allSatisfy { $0.contains("type=1") && $0.contains("startTime=") })
        #expect(asked.contains { $0.contains("token=page-4") })
    }

    @Test("forged notifications change nothing (and are in the purchase's story as unconfirmed): a void Google does not list, a revocation of a purchase it reports active, a future eventTimeMillis; the orders the API names are searchable",
          arguments: Backend.allCases)
    func forgedChangeNothing(backend: Backend) async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.product, at: PlayHarness.productPath("p-1"))
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath("sub-1"))
        try await TestDatabases.withStore(backend) { store async throws in
            let recorded = RecordingMetrics()
            var logger = Logger(label: "forged-claims-test")
            logger.logLevel = .critical
            var processor = EventProcessor(store: store, enricher: GooglePlayEnricher(client: h.client),
                                           metrics: WorkerMetrics(factory: recorded), logger: logger)
            // With the console on: a held-back event is in its purchase's story, and changes nothing more.
            processor.keepsHistory = true
            func process(_ events: NormalizedEvent...) async -> [EventProcessor.Disposition] {
                await processor.apply(await processor.prepare(events.enumerated().map { Self.record($1, offset: Int64($0)) }))
            }
            let key = { (token: String) in PurchaseKey(source: "google", app: PlayHarness.package, environment: "production", subject: token) }
            let now = Timestamp.now.millisecondsSince1970
            let earlier = Timestamp(millisecondsSince1970: now - 60_000).rfc3339

            #expect(await process(Self.event("bought", .purchaseCompleted, token: "p-1", product: "coins_100", occurredAt: earlier),
                                  Self.event("subscribed", .subscriptionStarted, token: "sub-1", occurredAt: earlier))
                    == [.done(.applied), .done(.applied)])
            #expect(try await store.purchase(key("p-1"))?.state == .active)
            // A push names no order; the orders the Play API named are kept in the history, where the console's search finds them.
            #expect(try await store.purchaseIds(withTransactionOrSubject: ["GPA.3345-1234-5678-90123"]) == [store.purchaseIds.id(of: key("sub-1"))])
            #expect(try await store.purchaseIds(withTransactionOrSubject: ["GPA.3312-5678-9012-34567"]) == [store.purchaseIds.id(of: key("p-1"))])

            // Someone with a valid push token voids p-1 and revokes sub-1, claiming a time far ahead.
            let future = "2100-01-01T00:00:00.000Z"
            let forged = await process(Self.event("forged-void", .purchaseRefunded, token: "p-1", occurredAt: future),
                                       Self.event("forged-revoke", .subscriptionRevoked, token: "sub-1", occurredAt: future))
            #expect(forged.first == .done(.unchanged))
            #expect(try await store.purchase(key("p-1"))?.state == .active)
            let subscription = try await store.purchase(key("sub-1"))
            #expect(subscription?.state == .active)
            #expect((subscription?.lastEventAtMs ?? .max) <= Timestamp.now.millisecondsSince1970)
            #expect(recorded.total("tollgate_worker_unconfirmed_events_total") == 2)
            #expect(recorded.total("tollgate_worker_unconfirmed_events_total", ["type": "purchase.refunded"]) == 1)
            let story = try await store.history(ofPurchase: store.purchaseIds.id(of: key("p-1")))
            #expect(story.map(\.type) == ["purchase.completed", "purchase.refunded"] && story.map(\.outcome) == ["applied", "unconfirmed"])
            #expect(story.last?.entitlements == [] && story.last?.stateAfter == nil)
            // Noted, not processed: Google's own event of that id, once it lists it, is still applied.
            #expect(try await store.hasProcessed(eventId: "google:forged-void") == false)

            // A one-time claim that names no product cannot be asked about, so it changes nothing either:
            // not a cancel of p-1, nor a purchase of a token nobody bought.
            #expect(await process(Self.event("forged-cancel", .purchaseCanceled, token: "p-1", occurredAt: future),
                                  Self.event("forged-buy", .purchaseCompleted, token: "never-bought", occurredAt: earlier))
                    == [.done(.unchanged), .done(.unchanged)])
            #expect(try await store.purchase(key("p-1"))?.state == .active)
            #expect(try await store.purchase(key("never-bought")) == nil)
            #expect(recorded.total("tollgate_worker_unconfirmed_events_total") == 4)

            // Google's own void, listed, arriving after the forged one's far-future time: it applies.
            h.fake.storeVoided([Self.voided("p-1", atMs: now - 1_000)])
            #expect(await process(Self.event("real-void", .purchaseRefunded, token: "p-1", occurredAt: Timestamp(millisecondsSince1970: now - 1_000).rfc3339))
                    == [.done(.applied)])
            #expect(try await store.purchase(key("p-1"))?.state == .refunded)
            #expect(recorded.total("tollgate_worker_unconfirmed_events_total") == 4)

            // A license tester's purchase is a sandbox one; Google's void of it (which says no environment) ends it there.
            h.fake.store(PlayFixtures.testProduct, at: PlayHarness.productPath("tester-1"))
            #expect(await process(Self.event("tester-bought", .purchaseCompleted, token: "tester-1", product: "coins_100", occurredAt: earlier))
                    == [.done(.applied)])
            h.fake.storeVoided([Self.voided("p-1", atMs: now - 1_000), Self.voided("tester-1", atMs: now - 500)])
            #expect(await process(Self.event("tester-void", .purchaseRefunded, token: "tester-1", occurredAt: Timestamp(millisecondsSince1970: now - 500).rfc3339))
                    == [.done(.applied)])
            let sandboxKey = PurchaseKey(source: "google", app: PlayHarness.package, environment: "sandbox", subject: "tester-1")
            #expect(try await store.purchase(sandboxKey)?.state == .refunded)
            #expect(try await store.purchase(key("tester-1")) == nil)
        }
    }
}
