import Entitlements
import Events
import Kafka
import StoreTestSupport
import Testing
@testable import Workers

/// `tollgate dev`'s embedded broker refuses a record for a tier that holds all it may until its consumer
/// commits (`MockLogGuard`). One loop consumes every tier: if re-routing from the first tier into a full
/// second one waited there, nothing would ever drain the second. It pauses the record instead and goes on.
@Suite("End to end: retry tiers on a full embedded broker")
struct FullRetryTierTests {
    @Test("a store outage that fills the last tier: the first tier's records wait paused, the last tier drains, every event is applied, none dead-lettered")
    func fullTierDoesNotStopTheOthers() async throws {
        // A few retried records a partition: a tier fills with a handful of events.
        let budget = 4_500
        try await TestDatabases.withURL(.sqlite) { url in
            try await withStore(url: url + "?busy_timeout_ms=100") { store in
                // The last tier waits long enough that none of its records falls due (and fails again, to the DLT)
                // while the outage lasts, however slowly a loaded machine fills it.
                try await WorkerHarness.with(retryDelaysMs: [100, Self.lastTierMs], logGuard: { topics in
                    MockLogGuard(topics: [topics.events, topics.retry(delayMs: 100), topics.retry(delayMs: Self.lastTierMs)], budgetBytes: budget)
                }) { harness in
                    try await harness.withWorkers(store: store) { workers in
                        try await Self.outage(url: url, store: store, harness: harness, workers: workers)
                    }
                }
            }
        }
    }

    static let lastTierMs = 30_000

    private static func outage(url: String, store: EntitlementStore, harness: WorkerHarness, workers: RunningWorkers) async throws {
        let now = Timestamp.now.millisecondsSince1970
        // One purchase: one key, so one partition of each topic takes them all.
        let events = (0..<6).map { index in
            ProjectionTests.event("full-tier-\(index)", .subscriptionRenewed, at: now - ProjectionTests.day + Int64(index),
                                  expiresMs: now + 29 * ProjectionTests.day, subject: "full-tier")
        }
        let last = harness.topics.retry(delayMs: Self.lastTierMs)
        try await SQLiteWriteLock.holding(url) { lock in
            for event in events {
                // The events topic itself may be full for a moment (the projection waits on the first tier).
                try await waitUntil("\(event.id) published", every: .milliseconds(50)) { (try? await harness.publish(event)) != nil }
            }
            // The last tier is full and a record of the first has been refused its move there: more moves
            // were tried than the tier holds. (Before its first records are due, 30 s after they came.)
            try await waitUntil("a record refused by the full last tier", timeout: .seconds(25), every: .milliseconds(10)) {
                let held = harness.client.mockLogGuard?.usage().first { $0.topic == last }?.records ?? 0
                return held > 0 && workers.metrics.total("tollgate_worker_retries_total", ["topic": last]) > held
            }
            await lock.release()
        }
        // Generous bounds: each record goes through paused partitions, seeks and a 30 s tier, and in the full
        // suite, on two cores, this has taken over two minutes.
        for event in events {
            try await waitUntil("\(event.id) applied", timeout: .seconds(240)) { try await store.hasProcessed(eventId: event.id) }
        }
        #expect(workers.metrics.total("tollgate_worker_dead_letters_total") == 0)
        #expect(try await harness.records(harness.topics.deadLetter).isEmpty)
    }
}
