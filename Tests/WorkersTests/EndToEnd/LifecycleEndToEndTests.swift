import Entitlements
import Events
import StoreTestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Events published to tollgate.events as the gateway publishes them, projected by running workers
/// into a real store and relayed to tollgate.entitlements: on SQLite and PostgreSQL.
@Suite("End to end: events to entitlements")
struct LifecycleEndToEndTests {
    static let day = ProjectionTests.day
    static let key = "com.example/production/u-1/pro.monthly"

    @Test("started, renewed, expired: the store ends expired and every change reaches tollgate.entitlements once, in order",
          arguments: Backend.allCases)
    func lifecycle(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            try await WorkerHarness.with { harness in
                try await harness.withWorkers(store: store) { workers in
                    let now = Timestamp.now.millisecondsSince1970
                    let start = now - 40 * Self.day, renewal = start + 30 * Self.day
                    let events = [
                        ProjectionTests.event("life-1", .subscriptionStarted, at: start, expiresMs: start + 30 * Self.day),
                        ProjectionTests.event("life-2", .subscriptionRenewed, at: renewal, expiresMs: renewal + 30 * Self.day),
                        ProjectionTests.event("life-3", .subscriptionExpired, at: now - 1_000),
                    ]
                    // One at a time: one subject is one key, so one partition, in this order.
                    for event in events { try await harness.publish(event) }

                    try await waitUntil("3 events handled") { workers.metrics.events() >= 3 }
                    #expect(workers.metrics.events("applied") == 3)
                    let entitlements = try await store.entitlements(app: "com.example", user: "u-1")
                    #expect(entitlements?.count == 1)
                    let entitlement = try #require(entitlements?.first)
                    #expect(entitlement.state == .expired)
                    #expect(entitlement.expiresAtMs == renewal + 30 * Self.day)
                    #expect(!entitlement.isActive(atMs: Timestamp.now.millisecondsSince1970))
                    let purchase = try await store.purchase(PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-1"))
                    #expect(purchase?.state == .expired)
                    #expect(purchase?.lastEventId == "life-3")

                    // Published, then removed from the outbox: nothing more can reach the topic after this.
                    try await waitUntil("the outbox relayed") { try await store.pendingChanges(limit: 1).isEmpty }
                    let records = try await harness.records(harness.topics.entitlements).map(EntitlementRecord.init)
                    #expect(records.map(\.key) == Array(repeating: Self.key, count: 3))
                    #expect(records.map(\.eventId) == ["life-1", "life-2", "life-3"])
                    #expect(records.map(\.headerEventId) == ["life-1", "life-2", "life-3"])
                    #expect(records.map(\.state) == ["active", "active", "expired"])
                    #expect(records.map(\.active) == [false, true, false])
                    #expect(records.map(\.sequence) == records.map(\.sequence).sorted())
                    #expect(records.allSatisfy { $0.purchaseId == records.first?.purchaseId && $0.purchaseId.hasPrefix("pur_") && $0.source == "apple" })
                }
            }
        }
    }

    @Test("the same event published twice is applied once: one change in the store and on the topic", arguments: Backend.allCases)
    func duplicate(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            try await WorkerHarness.with { harness in
                try await harness.withWorkers(store: store) { workers in
                    let now = Timestamp.now.millisecondsSince1970
                    let event = ProjectionTests.event("dup-1", .subscriptionStarted, at: now - Self.day, expiresMs: now + 29 * Self.day)
                    // As when a sender repeats a notification and the gateway publishes it again.
                    try await harness.publish(event)
                    try await harness.publish(event)

                    try await waitUntil("both records handled") { workers.metrics.events() >= 2 }
                    #expect(workers.metrics.events("applied") == 1)
                    // At least: a commit lost to a rebalance redelivers the batch, which is skipped the same way.
                    #expect(workers.metrics.events("duplicate") >= 1)
                    #expect(try await store.hasProcessed(eventId: "dup-1"))
                    try await waitUntil("the outbox relayed") { try await store.pendingChanges(limit: 1).isEmpty }
                    let records = try await harness.records(harness.topics.entitlements).map(EntitlementRecord.init)
                    #expect(records.map(\.eventId) == ["dup-1"])
                    #expect(records.first?.active == true)
                    #expect(records.first?.key == Self.key)
                }
            }
        }
    }
}
