import Entitlements
import Events
import Kafka
import StoreTestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A store outage while an event is applied: the event waits in a retry tier, with Spring Kafka's
/// headers, and is applied once the store is back.
@Suite("End to end: retry tiers")
struct RetryEndToEndTests {
    @Test("a store outage that ends: the event goes to tollgate.events-retry-300 with Spring's headers, is then applied once, nothing in the DLT")
    func recoversThroughRetryTier() async throws {
        try await TestDatabases.withURL(.sqlite) { url in
            // 200 ms: a write behind the held lock fails as busy in 200 ms, not the default 5 s.
            try await withStore(url: url + "?busy_timeout_ms=200") { store in
                try await WorkerHarness.with { harness in
                    try await harness.withWorkers(store: store) { workers in
                        try await Self.outage(url: url, store: store, harness: harness, workers: workers)
                    }
                }
            }
        }
    }

    private static func outage(url: String, store: EntitlementStore, harness: WorkerHarness, workers: RunningWorkers) async throws {
        let now = Timestamp.now.millisecondsSince1970
        let event = ProjectionTests.event("outage-1", .subscriptionStarted, at: now - ProjectionTests.day,
                                          expiresMs: now + 29 * ProjectionTests.day)
        let tier = harness.topics.retry(delayMs: 300)
        let (delivery, publishedAt, releasedAt) = try await SQLiteWriteLock.holding(url) { lock in
            let publishedAt = Timestamp.now.millisecondsSince1970
            let delivery = try await harness.publish(event)
            // Released as soon as the failure is routed, long before the tier's 300 ms are up.
            try await waitUntil("the event routed to \(tier)", every: .milliseconds(5)) {
                workers.metrics.total("tollgate_worker_retries_total", ["topic": tier]) >= 1
            }
            await lock.release()
            return (delivery, publishedAt, Timestamp.now.millisecondsSince1970)
        }

        try await waitUntil("the event applied after the outage") { try await store.hasProcessed(eventId: event.id) }
        try await waitUntil("the applied event counted") { workers.metrics.events() >= 1 }
        #expect(workers.metrics.events("applied") == 1)
        #expect(try await store.entitlements(app: "com.example", user: "u-1")?.map(\.state) == [.active])
        #expect(workers.metrics.total("tollgate_worker_failures_total", ["route": "retry", "failure": "tollgate.StoreUnavailable"]) >= 1)
        #expect(workers.metrics.total("tollgate_worker_dead_letters_total") == 0)
        #expect(try await harness.records(harness.topics.deadLetter).isEmpty)

        // One record, or more if a commit was lost to a rebalance and the event failed again on redelivery
        // (at least once): every one carries the same headers; the first one routed is the lowest offset.
        let retried = try await harness.records(tier, atLeast: 1).sorted { $0.offset < $1.offset }
        let record = try #require(retried.first)
        let lasting = { (copy: KafkaRecord) in copy.headers.filter { $0.name != SpringHeaders.backoffTimestamp } }
        #expect(retried.allSatisfy { lasting($0) == lasting(record) })
        #expect(record.keyString == event.subject)
        #expect(record.value == EventCoding.encode(event))
        #expect(record.headers.string(CloudEventHeaders.id) == event.id, "the CloudEvents headers travel with it")
        #expect(record.header(SpringHeaders.attempts) == BigEndian.int32(2))
        let backoff = try #require(record.header(SpringHeaders.backoffTimestamp))
        // Java's BigInteger.toByteArray(): today's epoch milliseconds take 41 bits, so 6 bytes, not a padded 8.
        #expect(backoff.count == 6)
        let due = BigEndian.integer(backoff)
        #expect(due >= publishedAt + 300 && due <= releasedAt + 300, "due \(due), published \(publishedAt), released \(releasedAt)")
        #expect(record.headers.string(SpringHeaders.originalTopic) == harness.topics.events)
        #expect(record.header(SpringHeaders.originalPartition) == BigEndian.int32(delivery.partition))
        #expect(record.header(SpringHeaders.originalOffset) == BigEndian.int64(delivery.offset))
        #expect(record.headers.string(SpringHeaders.originalConsumerGroup) == WorkerHarness.consumerGroup)
        #expect(record.headers.string(SpringHeaders.exceptionFQCN) == "tollgate.StoreUnavailable")
        #expect(record.headers.string(SpringHeaders.exceptionMessage)?.contains("database is locked") == true,
                "\(record.headers.string(SpringHeaders.exceptionMessage) ?? "no message")")
    }
}
