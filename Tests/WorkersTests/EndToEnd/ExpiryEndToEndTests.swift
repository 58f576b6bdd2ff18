import Entitlements
import Events
import StoreTestSupport
import Synchronization
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Two worker instances on one PostgreSQL database, each with an expiry sweeper on a clock the test
/// moves: a subscription's expiry passes with no notification, exactly one `active: false` reaches
/// tollgate.entitlements, and the late renewal makes it active again.
@Suite("End to end: expiries reach the topic")
struct ExpiryEndToEndTests {
    static let key = "com.example/production/u-1/pro.monthly"

    @Test("expiry passes: one active:false on the topic from two replicas; the renewal then: active:true again")
    func expiryWithTwoReplicas() async throws {
        let realNow = Timestamp.now.millisecondsSince1970
        let expires = realNow + 3_600_000
        // The sweepers' clock starts now; the test moves it past the expiry instead of waiting an hour.
        let offset = Atomic<Int64>(0)
        // Each sweep reads the clock once: its reads show the sweepers still looking.
        let reads = Atomic<Int>(0)
        let clock: @Sendable () -> Int64 = {
            reads.add(1, ordering: .relaxed)
            return Timestamp.now.millisecondsSince1970 + offset.load(ordering: .relaxed)
        }
        try await TestDatabases.withURL(.postgres) { url in
            try await withStore(url: url) { storeA in
                try await withStore(url: url) { storeB in
                    try await WorkerHarness.with { harness in
                        try await harness.withWorkers(store: storeA, expiryPublishDelayMs: 200, clock: clock) { _ in
                            try await harness.withWorkers(store: storeB, expiryPublishDelayMs: 200, clock: clock) { _ in
                                try await harness.publish(ProjectionTests.event("exp-1", .subscriptionStarted, at: realNow - 1_000,
                                                                                expiresMs: expires))
                                var records = try await Self.records(harness, atLeast: 1)
                                #expect(records.map(\.active) == [true])

                                offset.store(2 * 3_600_000, ordering: .relaxed)
                                records = try await Self.records(harness, atLeast: 2)
                                #expect(records.map(\.active) == [true, false])
                                #expect(records.map(\.state) == ["active", "active"])
                                #expect(records.map(\.eventId) == ["exp-1", "exp-1"])
                                // Both sweepers keep looking (every 100 ms): neither queues the end again. Awaited:
                                // ten more sweeps after the end was published, whatever the machine's speed.
                                let looked = reads.load(ordering: .relaxed)
                                try await waitUntil("ten more sweeps") { reads.load(ordering: .relaxed) >= looked + 10 }
                                #expect(try await storeA.pendingChanges(limit: 10).isEmpty)
                                #expect(try await harness.records(harness.topics.entitlements).count == 2)

                                let renewal = realNow + 2 * 3_600_000
                                try await harness.publish(ProjectionTests.event("exp-2", .subscriptionRenewed, at: renewal,
                                                                                expiresMs: renewal + 30 * ProjectionTests.day))
                                records = try await Self.records(harness, atLeast: 3)
                                #expect(records.map(\.active) == [true, false, true])
                                #expect(records.map(\.key) == Array(repeating: Self.key, count: 3))
                                #expect(records.map(\.sequence) == records.map(\.sequence).sorted())
                            }
                        }
                    }
                }
            }
        }
    }

    static func records(_ harness: WorkerHarness, atLeast count: Int) async throws -> [EntitlementRecord] {
        try await harness.records(harness.topics.entitlements, atLeast: count).map(EntitlementRecord.init)
    }
}
