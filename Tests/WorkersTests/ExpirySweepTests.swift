import Entitlements
import Events
import Foundation
import Store
import StoreTestSupport
import Synchronization
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// An expiry or grace period that ends without a notification reaches
/// `tollgate.entitlements` (active false), once across replicas, and a late notification still counts.
@Suite("Expiries on the topic")
struct ExpirySweepTests {
    static let day = ProjectionTests.day
    static let hour: Int64 = 3_600_000

    static func apply(_ store: EntitlementStore, nowMs: Int64, _ events: NormalizedEvent...) async throws -> [ApplyOutcome] {
        try await store.apply(events.compactMap { Projector.change(for: $0) }, nowMs: nowMs)
    }

    @Test("an expiry passes: one active:false change, once; the late renewal makes it active again", arguments: Backend.allCases)
    func expiryThenRenewal(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let now = Timestamp.now.millisecondsSince1970
            let expires = now + Self.hour
            _ = try await Self.apply(store, nowMs: now, ProjectionTests.event("s1", .subscriptionStarted, at: now - 1_000, expiresMs: expires))
            #expect(try await store.queueExpiries(nowMs: expires - 1, limit: 10) == 0)
            #expect(try await store.queueExpiries(nowMs: expires, limit: 10) == 1)
            #expect(try await store.queueExpiries(nowMs: expires + 1_000, limit: 10) == 0)
            var changes = try await store.pendingChanges(limit: 10)
            #expect(changes.map(\.active) == [true, false])
            #expect(changes.map(\.entitlement.state) == [.active, .active])
            #expect(changes.map(\.eventId) == ["s1", "s1"])

            // The renewal Apple sends late: active again, and swept again only when the new period ends.
            let renewed = expires + 30 * Self.day
            #expect(try await Self.apply(store, nowMs: expires + 5_000,
                                         ProjectionTests.event("r1", .subscriptionRenewed, at: expires + 2_000, expiresMs: renewed)) == [.applied])
            #expect(try await store.queueExpiries(nowMs: expires + 10_000, limit: 10) == 0)
            changes = try await store.pendingChanges(limit: 10)
            #expect(changes.map(\.active) == [true, false, true])
            #expect(changes.last?.entitlement.expiresAtMs == renewed)

            // A late EXPIRED instead: the state changes (expired), still inactive.
            #expect(try await store.queueExpiries(nowMs: renewed, limit: 10) == 1)
            _ = try await Self.apply(store, nowMs: renewed + 1_000, ProjectionTests.event("x1", .subscriptionExpired, at: renewed + 500))
            changes = try await store.pendingChanges(limit: 10)
            #expect(changes.map(\.active) == [true, false, true, false, false])
            #expect(changes.last?.entitlement.state == .expired)
            #expect(try await store.queueExpiries(nowMs: renewed + 2 * Self.day, limit: 10) == 0)
        }
    }

    @Test("a grace period that ends without a notification is swept at its end, not at the expiry", arguments: Backend.allCases)
    func gracePeriod(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let now = Timestamp.now.millisecondsSince1970
            let expires = now - Self.hour, graceEnds = now + Self.hour
            _ = try await Self.apply(store, nowMs: now,
                                     ProjectionTests.event("b1", .subscriptionBillingIssue, at: now - 1_000, expiresMs: expires, grace: graceEnds))
            #expect(try await store.queueExpiries(nowMs: now, limit: 10) == 0)
            #expect(try await store.queueExpiries(nowMs: graceEnds, limit: 10) == 1)
            #expect(try await store.pendingChanges(limit: 10).map(\.active) == [true, false])
        }
    }

    @Test("two stores on one database sweep together: each end is queued exactly once", arguments: Backend.allCases)
    func twoReplicas(backend: Backend) async throws {
        try await TestDatabases.withURL(backend) { url in
            try await withStore(url: url) { a in
                try await withStore(url: url) { b in
                    let now = Timestamp.now.millisecondsSince1970
                    let events = (0..<40).map { k in
                        ProjectionTests.event("e\(k)", .subscriptionStarted, at: now - 1_000, expiresMs: now + Self.hour + Int64(k),
                                              subject: "otx-\(k)", user: "u-\(k)")
                    }
                    _ = try await a.apply(events.compactMap { Projector.change(for: $0) }, nowMs: now)
                    let later = now + 2 * Self.hour
                    // Small batches, so the two take turns over the same rows.
                    async let fromA = Self.sweepAll(a, nowMs: later)
                    async let fromB = Self.sweepAll(b, nowMs: later)
                    let (queuedA, queuedB) = try await (fromA, fromB)
                    #expect(queuedA + queuedB == 40)
                    let changes = try await a.pendingChanges(limit: 1_000)
                    #expect(changes.filter { !$0.active }.count == 40)
                    #expect(Set(changes.filter { !$0.active }.map(\.entitlement.topicKey)).count == 40)
                }
            }
        }
    }

    static func sweepAll(_ store: EntitlementStore, nowMs: Int64) async throws -> Int {
        var total = 0
        while true {
            let queued = try await store.queueExpiries(nowMs: nowMs, limit: 3)
            total += queued
            if queued == 0 { return total }
        }
    }
}
