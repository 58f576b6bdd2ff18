import Entitlements
import Events
import Foundation
import Logging
import ServiceLifecycle
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A verified Play purchase is acknowledged once; when Google cannot take it, the workers'
/// loop asks again (the queue in the store, SQLite and PostgreSQL) until Google does, or the three days
/// pass; a refusal for good is not retried.
@Suite("Play acknowledgements")
struct PlayAcknowledgerTests {
    static let token = "ack-token.AO-J1OzSecretPurchaseToken"

    /// A clock the test moves.
    final class Clock: Sendable {
        let ms: Mutex<Int64>
        init(_ start: Int64) { ms = Mutex(start) }
        var now: Int64 { ms.withLock { $0 } }
        func advance(_ by: Int64) { ms.withLock { $0 += by } }
    }

    static func acknowledger(_ h: PlayHarness, store: EntitlementStore, metrics: RecordingMetrics, clock: Clock) -> PlayAcknowledger {
        var logger = Logger(label: "play-ack-test")
        logger.logLevel = .critical
        return PlayAcknowledger(client: h.client, store: store, metrics: MerchantMetrics(factory: metrics), logger: logger,
                                backoff: PlayAcknowledgementBackoff(initialMs: 10, maxMs: 40, lastAttemptBeforeDeadlineMs: 0),
                                now: { clock.now })
    }

    static func subscriptionAck(deadlineMs: Int64) -> PlayAcknowledgement {
        PlayAcknowledgement(kind: .subscription, packageName: PlayHarness.package, productId: "premium_monthly", purchaseToken: token,
                            deadlineMs: deadlineMs)
    }

    static func productAck(deadlineMs: Int64) -> PlayAcknowledgement {
        PlayAcknowledgement(kind: .product, packageName: PlayHarness.package, productId: "lifetime_unlock", purchaseToken: token,
                            deadlineMs: deadlineMs)
    }

    /// Where `purchases.subscriptions.acknowledge` and `purchases.products.acknowledge` are asked.
    static let subscriptionAckPath = "/androidpublisher/v3/applications/\(PlayHarness.package)/purchases/subscriptions/premium_monthly/tokens/\(token)"
    static let productAckPath = "/androidpublisher/v3/applications/\(PlayHarness.package)/purchases/products/lifetime_unlock/tokens/\(token)"

    static let unavailable = FakeGooglePlay.Scripted.reply(.json(503, #"{"error": {"code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}}"#))

    static func outcomes(_ metrics: RecordingMetrics) -> [String: Int64] {
        var counts: [String: Int64] = [:]
        for outcome in PlayAcknowledger.Outcome.allCases {
            let n = metrics.total("tollgate_worker_play_acknowledgements_total", ["outcome": outcome.rawValue])
            if n > 0 { counts[outcome.rawValue] = n }
        }
        return counts
    }

    @Test("a subscription and a one-time purchase are each acknowledged once, at their endpoint, nothing queued")
    func acknowledgesOnce() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let clock = Clock(Timestamp.now.millisecondsSince1970)
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: clock.now), at: PlayHarness.subscriptionPath(Self.token))
        h.fake.store(GooglePurchaseVerifierTests.newProduct(purchaseMs: clock.now), at: PlayHarness.productPath(Self.token))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            let metrics = RecordingMetrics()
            let acknowledger = Self.acknowledger(h, store: store, metrics: metrics, clock: clock)
            await acknowledger.acknowledge(Self.subscriptionAck(deadlineMs: clock.now + 86_400_000))
            await acknowledger.acknowledge(Self.productAck(deadlineMs: clock.now + 86_400_000))
            #expect(h.fake.acknowledged == [Self.subscriptionAckPath, Self.productAckPath])
            #expect(Self.outcomes(metrics) == ["acknowledged": 2])
            #expect(try await store.pendingPlayAcknowledgements().isEmpty)
        }
    }

    @Test("a failed acknowledgement is queued and retried by the loop until Google takes it, once; each attempt is in the purchase's story, without its token", arguments: Backend.allCases)
    func queuedAndRetried(backend: Backend) async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let clock = Clock(Timestamp.now.millisecondsSince1970)
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: clock.now), at: PlayHarness.subscriptionPath(Self.token))
        // The first attempt, the same purchase's second one and the loop's first retry find Google
        // unavailable; the loop's second retry gets through.
        h.fake.script(Self.subscriptionAckPath + ":acknowledge", Self.unavailable, Self.unavailable, Self.unavailable)
        try await TestDatabases.withStore(backend) { store async throws in
            let metrics = RecordingMetrics()
            store.keepStoreCalls()
            let acknowledger = Self.acknowledger(h, store: store, metrics: metrics, clock: clock)
            let deadline = clock.now + 3 * 86_400_000
            await acknowledger.acknowledge(Self.subscriptionAck(deadlineMs: deadline))
            #expect(h.fake.acknowledged.isEmpty)
            #expect(Self.outcomes(metrics) == ["queued": 1])
            let queued = try await store.pendingPlayAcknowledgements()
            #expect(queued.map(\.purchaseToken) == [Self.token])
            #expect(queued.first?.attempts == 1)
            #expect(queued.first?.deadlineMs == deadline)
            #expect(queued.first?.kind == "subscription")

            // The same purchase again while Google is still away: queued once.
            await acknowledger.acknowledge(Self.subscriptionAck(deadlineMs: deadline))
            #expect(Self.outcomes(metrics) == ["queued": 1, "already": 1])
            #expect(try await store.pendingPlayAcknowledgements().count == 1)

            let loop = PlayAcknowledgementRetryLoop(acknowledger: acknowledger, pollInterval: .milliseconds(20))
            let running = Task { try await loop.run() }
            // The loop's clock moves on as real time would, past each backoff.
            let ticking = Task { while !Task.isCancelled { clock.advance(50); try? await Task.sleep(for: .milliseconds(10)) } }
            try await waitUntil("the retry taken") { !h.fake.acknowledged.isEmpty }
            try await waitUntil("the queue empty") { try await store.pendingPlayAcknowledgements().isEmpty }
            running.cancel()
            ticking.cancel()
            _ = try? await running.value
            #expect(h.fake.acknowledged == [Self.subscriptionAckPath])
            #expect(Self.outcomes(metrics) == ["queued": 1, "already": 1, "retried": 1])
            let attempts = h.fake.apiTargets.filter { $0.hasSuffix(":acknowledge") }.count
            #expect(attempts == 4)
            let key = PurchaseKey(source: "google", app: PlayHarness.package, environment: "production", subject: Self.token)
            let calls = try await store.storeCalls(key)
            #expect(calls.map(\.outcome) == ["queued", "queued", "retrying", "acknowledged"] && calls.allSatisfy { $0.call == "play.acknowledge" })
            #expect(!calls.contains { $0.detail.contains(Self.token) })
        }
    }

    @Test("an acknowledgement still refused when its three days pass is dropped and counted expired", arguments: Backend.allCases)
    func expires(backend: Backend) async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let clock = Clock(Timestamp.now.millisecondsSince1970)
        h.fake.store(GooglePurchaseVerifierTests.newProduct(purchaseMs: clock.now), at: PlayHarness.productPath(Self.token))
        h.fake.script(Self.productAckPath + ":acknowledge", Self.unavailable, Self.unavailable)
        try await TestDatabases.withStore(backend) { store async throws in
            let metrics = RecordingMetrics()
            let acknowledger = Self.acknowledger(h, store: store, metrics: metrics, clock: clock)
            await acknowledger.acknowledge(Self.productAck(deadlineMs: clock.now + 1_000))
            #expect(Self.outcomes(metrics) == ["queued": 1])
            let loop = PlayAcknowledgementRetryLoop(acknowledger: acknowledger)
            clock.advance(20)
            #expect(try await loop.retryDue() == 1)
            #expect(try await store.pendingPlayAcknowledgements().first?.attempts == 2)
            // Past the deadline: dropped without asking Google again.
            clock.advance(2_000)
            let asked = h.fake.apiTargets.count
            #expect(try await loop.retryDue() == 1)
            #expect(h.fake.apiTargets.count == asked)
            #expect(try await store.pendingPlayAcknowledgements().isEmpty)
            #expect(Self.outcomes(metrics) == ["queued": 1, "expired": 1])
            #expect(h.fake.acknowledged.isEmpty)

            // One whose deadline passed before the first attempt failed is not queued at all.
            h.fake.script(Self.productAckPath + ":acknowledge", Self.unavailable)
            await acknowledger.acknowledge(Self.productAck(deadlineMs: clock.now - 1))
            #expect(Self.outcomes(metrics) == ["queued": 1, "expired": 2])
            #expect(try await store.pendingPlayAcknowledgements().isEmpty)
        }
    }

    @Test("410 gone is not retried: not at the first attempt, and not by the loop")
    func goneIsNotRetried() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let clock = Clock(Timestamp.now.millisecondsSince1970)
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: clock.now), at: PlayHarness.subscriptionPath(Self.token))
        let gone = FakeGooglePlay.Scripted.reply(.json(410, #"{"error": {"code": 410, "message": "The subscription purchase is no longer available for query because it has been expired for too long.", "status": "GONE"}}"#))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            let metrics = RecordingMetrics()
            let acknowledger = Self.acknowledger(h, store: store, metrics: metrics, clock: clock)
            h.fake.script(Self.subscriptionAckPath + ":acknowledge", gone)
            await acknowledger.acknowledge(Self.subscriptionAck(deadlineMs: clock.now + 86_400_000))
            #expect(Self.outcomes(metrics) == ["failed": 1])
            #expect(try await store.pendingPlayAcknowledgements().isEmpty)

            // Queued while Google was away, then gone: dropped at the first retry.
            h.fake.script(Self.subscriptionAckPath + ":acknowledge", Self.unavailable, gone)
            await acknowledger.acknowledge(Self.subscriptionAck(deadlineMs: clock.now + 86_400_000))
            let loop = PlayAcknowledgementRetryLoop(acknowledger: acknowledger)
            clock.advance(20)
            #expect(try await loop.retryDue() == 1)
            #expect(try await store.pendingPlayAcknowledgements().isEmpty)
            clock.advance(1_000)
            #expect(try await loop.retryDue() == 0)
            #expect(Self.outcomes(metrics) == ["failed": 2, "queued": 1])
            #expect(h.fake.acknowledged.isEmpty)
            #expect(h.fake.apiTargets.filter { $0.hasSuffix(":acknowledge") }.count == 3)
        }
    }

    @Test("the workers run the loop: a queued acknowledgement is taken while they run, and they stop gracefully")
    func runByTheWorkers() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let clock = Clock(Timestamp.now.millisecondsSince1970)
        h.fake.store(GooglePurchaseVerifierTests.newProduct(purchaseMs: clock.now), at: PlayHarness.productPath(Self.token))
        h.fake.script(Self.productAckPath + ":acknowledge", Self.unavailable)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let metrics = RecordingMetrics()
                let acknowledger = Self.acknowledger(h, store: store, metrics: metrics, clock: clock)
                let google = GooglePurchases(verifier: GooglePurchaseVerifier(client: h.client, packages: [PlayHarness.package]),
                                             acknowledger: acknowledger, retryPollInterval: .milliseconds(20))
                await google.acknowledger?.acknowledge(Self.productAck(deadlineMs: clock.now + 86_400_000))
                #expect(Self.outcomes(metrics) == ["queued": 1])
                clock.advance(1_000)
                let workers = try EntitlementWorkers(client: harness.client, topics: harness.topics, consumerGroup: WorkerHarness.consumerGroup,
                                                     store: store, purchases: .init(verifiers: [google.verifier], acknowledger: google.acknowledger),
                                                     playAcknowledgementRetry: google.retryLoop, metrics: WorkerMetrics(factory: RecordingMetrics()),
                                                     logger: harness.logger)
                #expect(workers.stopOrder.names.contains("play acknowledgements"))
                let group = ServiceGroup(services: [workers], logger: harness.logger)
                let running = Task { try await group.run() }
                try await waitUntil("the queued acknowledgement taken") { try await store.pendingPlayAcknowledgements().isEmpty }
                await group.triggerGracefulShutdown()
                try await running.value
                #expect(h.fake.acknowledged == [Self.productAckPath])
                #expect(Self.outcomes(metrics) == ["queued": 1, "retried": 1])
            }
        }
    }

    @Test("a row claimed by one loop is not tried by another until its claim runs out", arguments: Backend.allCases)
    func claimedOnce(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let pending = PendingPlayAcknowledgement(packageName: PlayHarness.package, kind: "product", productId: "lifetime_unlock",
                                                     purchaseToken: Self.token, deadlineMs: 10_000, attempts: 1, nextAttemptAtMs: 100,
                                                     queuedAtMs: 50)
            #expect(try await store.queuePlayAcknowledgement(pending, lastError: "acknowledge_product: http_503"))
            #expect(try await store.claimDuePlayAcknowledgements(nowMs: 99, claimUntilMs: 1_000, limit: 10).isEmpty)
            #expect(try await store.claimDuePlayAcknowledgements(nowMs: 100, claimUntilMs: 1_000, limit: 10) == [pending])
            #expect(try await store.claimDuePlayAcknowledgements(nowMs: 500, claimUntilMs: 2_000, limit: 10).isEmpty)
            #expect(try await store.claimDuePlayAcknowledgements(nowMs: 1_000, claimUntilMs: 2_000, limit: 10).map(\.nextAttemptAtMs) == [1_000])
            let backlog = try await store.playAcknowledgementBacklog()
            #expect(backlog.count == 1)
            #expect(backlog.oldestQueuedAtMs == 50)
        }
    }
}
