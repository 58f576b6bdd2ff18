import Config
import Entitlements
import Events
import Logging
import Rejections
import StoreTestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant

/// `PurchaseService` without a broker: its publisher is a test's (`EventPublisher`), so what it
/// publishes, and what it answers when publishing fails, are seen directly.
@Suite("Purchase reports, published through an EventPublisher")
struct PurchaseServiceTests {
    /// A store's verifier that proves one one-time purchase.
    struct OnePurchase: PurchaseVerifying {
        func verify(_ claim: PurchaseClaim) async throws(Rejection) -> [VerifiedPurchase] {
            [VerifiedPurchase(source: .apple, app: "com.example", environment: .production, subject: "otx-7", product: "gems.100",
                              kind: .oneTime, type: .purchaseCompleted, occurredAt: Timestamp.now)]
        }
    }

    static func service(_ store: EntitlementStore, _ publisher: any EventPublisher, waitMs: Int) -> PurchaseService {
        var settings = PurchaseSettings()
        settings.waitMs = waitMs
        var logger = Logger(label: "purchase-service-test")
        logger.logLevel = .critical
        return PurchaseService(verifiers: [OnePurchase()], store: store, publisher: publisher, settings: settings, acknowledger: nil,
                               metrics: MerchantMetrics(factory: RecordingMetrics()), logger: logger)
    }

    @Test("a purchase is published as its store's event for the user; the answer waits until it is applied")
    func publishedThenApplied() async throws {
        try await TestDatabases.withStore(.sqlite) { store async throws in
            // The projection's part, done as the event arrives.
            let publisher = RecordingPublisher(forward: { events in
                let changes = events.compactMap { Projector.change(for: $0, snapshot: nil, ownership: .transfer) }
                _ = try await store.apply(changes, nowMs: Timestamp.now.millisecondsSince1970)
            })
            let outcome = try await Self.service(store, publisher, waitMs: 10_000)
                .report(.appleSignedTransaction("a.b.c"), app: "com.example", user: "user-7")
            let published = publisher.events.withLock { $0 }
            #expect(published.count == 1)
            #expect(published.first?.user == "user-7" && published.first?.subject == "otx-7" && published.first?.product == "gems.100")
            #expect(outcome.eventIds == published.map(\.id))
            #expect(outcome.applied)
            let stored = try await store.purchase(PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-7"))
            #expect(stored?.user == "user-7")
        }
    }

    @Test("nothing is applied and the answer is 503 not_durable with Retry-After when the event cannot be published")
    func notDurable() async throws {
        try await TestDatabases.withStore(.sqlite) { store async throws in
            let refused = await #expect(throws: Rejection.self) {
                try await Self.service(store, RecordingPublisher(refuses: true), waitMs: 10_000)
                    .report(.appleSignedTransaction("a.b.c"), app: "com.example", user: "user-7")
            }
            #expect(refused?.code == "not_durable" && refused?.httpStatus == 503 && refused?.retryAfterSeconds == 5)
            #expect(try await store.purchase(PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-7")) == nil)
        }
    }
}
