import Entitlements
import Events
import Kafka
import Store
import StoreTestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Two worker instances in one consumer group on one PostgreSQL database, as two replicas of
/// `tollgate work` run: the partitions are shared, every event is applied exactly once, and when one
/// instance shuts down the other takes its partitions over without losing or repeating anything.
@Suite("End to end: two worker instances")
struct TwoInstancesEndToEndTests {
    static let subjects = 60
    static let rounds = 5
    static let day = ProjectionTests.day

    /// Round `r` holds one event per subject: started first, then renewals, each later and extending the
    /// expiry, so each is applied (none is older than the stored state) and changes the entitlement.
    static func round(_ r: Int, now: Int64) -> [NormalizedEvent] {
        (0..<subjects).map { k in
            ProjectionTests.event("two-\(k)-\(r)", r == 0 ? .subscriptionStarted : .subscriptionRenewed,
                                  at: now - Int64(10 - r) * day, expiresMs: now + Int64(r + 1) * day, subject: "otx-\(k)", user: "u-\(k)")
        }
    }

    @Test("300 events over 3 partitions and two instances: each applied once; one instance stops and the other takes over")
    func shareAndTakeOver() async throws {
        try await TestDatabases.withURL(.postgres) { url in
            try await withStore(url: url) { storeA in
                try await withStore(url: url) { storeB in
                    try await WorkerHarness.with { harness in
                        try await harness.withWorkers(store: storeA) { a in
                            try await harness.withWorkers(store: storeB) { b in
                                try await Self.run(harness: harness, instances: [(a, storeA), (b, storeB)])
                            }
                        }
                    }
                }
            }
        }
    }

    private static func run(harness: WorkerHarness, instances: [(workers: RunningWorkers, store: EntitlementStore)]) async throws {
        let now = Timestamp.now.millisecondsSince1970
        let total = subjects * rounds
        func applied() -> Int64 { instances.map { $0.workers.metrics.events("applied") }.reduce(0, +) }

        // Rounds one after the other (each acknowledged before the next), so each subject's events are in order.
        for r in 0..<3 { try await harness.publishAll(round(r, now: now)) }
        try await waitUntil("the first \(3 * subjects) events applied", timeout: .seconds(90)) { applied() >= Int64(3 * subjects) }

        // The busier instance has partitions: it leaves, the other must take them over.
        let sorted = instances.sorted { $0.workers.metrics.events("applied") > $1.workers.metrics.events("applied") }
        let (leaving, staying) = (sorted[0], sorted[1])
        try await leaving.workers.stop()
        let leftWith = leaving.workers.metrics.events("applied")
        let stayedWith = staying.workers.metrics.events("applied")
        #expect(leftWith + stayedWith == Int64(3 * subjects))

        var partitions: Set<Int32> = []
        for r in 3..<rounds {
            partitions.formUnion(try await harness.publishAll(round(r, now: now)).map(\.partition))
        }
        #expect(partitions == [0, 1, 2], "the later events span every partition, the leaving instance's included")
        try await waitUntil("all \(total) events applied", timeout: .seconds(90)) { applied() >= Int64(total) }

        #expect(applied() == Int64(total))
        #expect(leaving.workers.metrics.events("applied") == leftWith, "nothing applied after it left")
        #expect(staying.workers.metrics.events("applied") - stayedWith == Int64((rounds - 3) * subjects))
        for instance in instances {
            #expect(instance.workers.metrics.events("unchanged") == 0, "no event arrived out of order")
            #expect(instance.workers.metrics.total("tollgate_worker_failures_total") == 0)
        }
        let processed = try await staying.store.database.read { connection throws(StoreError) in
            try connection.query("SELECT COUNT(*) AS n FROM processed_events").first?.int("n")
        }
        #expect(processed == Int64(total))
        for k in 0..<subjects {
            let purchase = try await staying.store.purchase(PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-\(k)"))
            #expect(purchase?.lastEventId == "two-\(k)-\(rounds - 1)", "otx-\(k)")
            #expect(purchase?.user == "u-\(k)")
        }

        // The leaving instance may have held the relay's lease: the other takes it once it expires (15 s).
        try await waitUntil("the outbox relayed", timeout: .seconds(60)) { try await staying.store.pendingChanges(limit: 1).isEmpty }
        let records = try await harness.records(harness.topics.entitlements).map(EntitlementRecord.init)
        #expect(records.count == total, "one entitlement change per event, none lost, none repeated")
        for k in 0..<subjects {
            let ids = records.filter { $0.key == "com.example/production/u-\(k)/pro.monthly" }.map(\.eventId)
            #expect(ids == (0..<rounds).map { "two-\(k)-\($0)" }, "u-\(k)'s changes in order")
        }
    }
}
