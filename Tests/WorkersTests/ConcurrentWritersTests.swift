import Events
import StoreTestSupport
import Testing
@testable import Entitlements
@testable import Merchant
@testable import ProviderAPIs
@testable import Store
@testable import Workers

/// Two stores writing to one PostgreSQL database at the same time, as two worker instances do: what
/// READ COMMITTED lets one transaction see of the other's uncommitted work must not lose a change.
@Suite("Two writers on one PostgreSQL database")
struct ConcurrentWritersTests {
    static let day = ProjectionTests.day
    static let now = ProjectionTests.now

    static func change(_ event: NormalizedEvent) throws -> PurchaseChange {
        try #require(Projector.change(for: event))
    }

    static func started(_ id: String, subject: String, user: String) throws -> PurchaseChange {
        try change(ProjectionTests.event(id, .subscriptionStarted, at: now - day, expiresMs: now + 29 * day, subject: subject, user: user))
    }

    /// Runs `body` while `other` applies `changes` and then waits in `blocker`, its transaction open and written.
    static func whileOpen(_ other: EntitlementStore, _ changes: [PurchaseChange], blocker: BlockingChange,
                          _ body: (Task<[ApplyOutcome], any Error>) async throws -> Void) async throws {
        let held = Task { try await other.apply(changes + [blocker.change], nowMs: now, beforeCommit: blocker.hold) }
        await blocker.reached()
        do {
            try await body(held)
        } catch {
            blocker.release()
            _ = await held.result
            throw error
        }
        blocker.release()
        _ = await held.result
    }

    @Test("the relay removes only what it published: a change committed late with a lower sequence stays queued")
    func outboxLateCommit() async throws {
        try await TestDatabases.withURL(.postgres) { url in
            try await withStore(url: url) { store in
                try await withStore(url: url) { other in
                    let blocker = BlockingChange(eventId: "block", key: PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-block"))
                    // `other` queues u-1's change first (the lower sequence) and has not committed it yet.
                    try await Self.whileOpen(other, [try Self.started("late", subject: "otx-1", user: "u-1")], blocker: blocker) { held in
                        #expect(try await store.apply([try Self.started("early", subject: "otx-2", user: "u-2")], nowMs: Self.now) == [.applied])
                        // What the relay reads and publishes now.
                        let published = try await store.pendingChanges(limit: 10)
                        #expect(published.map(\.eventId) == ["early"])
                        blocker.release()
                        #expect(try await held.value == [.applied, .unchanged])
                        try await store.removeChanges(published.map(\.sequence))
                        let left = try await store.pendingChanges(limit: 10)
                        #expect(left.map(\.eventId) == ["late"])
                        #expect(left.map(\.sequence).allSatisfy { $0 < published[0].sequence })
                    }
                }
            }
        }
    }

    @Test("removeChanges removes exactly the sequences given, around one that was not", arguments: Backend.allCases)
    func removeExactly(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let changes = try (1...5).map { try Self.started("r-\($0)", subject: "otx-\($0)", user: "u-\($0)") }
            _ = try await store.apply(changes, nowMs: Self.now)
            let queued = try await store.pendingChanges(limit: 10)
            try #require(queued.count == 5)
            try await store.removeChanges([queued[4], queued[0], queued[1], queued[3]].map(\.sequence))
            #expect(try await store.pendingChanges(limit: 10).map(\.eventId) == ["r-3"])
        }
    }

    @Test("two purchases of one entitlement changed at once by two writers: the entitlement reflects both")
    func entitlementFromBothWriters() async throws {
        try await TestDatabases.withURL(.postgres) { url in
            try await withStore(url: url) { store in
                try await withStore(url: url) { other in
                    let long = Self.now - 40 * Self.day
                    _ = try await store.apply([
                        try Self.change(ProjectionTests.event("old-1", .subscriptionStarted, at: long, expiresMs: long + 30 * Self.day, subject: "otx-1")),
                        try Self.change(ProjectionTests.event("new-2", .subscriptionStarted, at: Self.now - 20 * Self.day,
                                                              expiresMs: Self.now + 10 * Self.day, subject: "otx-2")),
                    ], nowMs: Self.now)
                    #expect(try await store.entitlements(app: "com.example", user: "u-1")?.map(\.subject) == ["otx-2"])

                    let renewal = try Self.change(ProjectionTests.event("renew-1", .subscriptionRenewed, at: Self.now - 1_000,
                                                                        expiresMs: Self.now + 60 * Self.day, subject: "otx-1"))
                    let blocker = BlockingChange(eventId: "block", key: PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-block"))
                    // `other` renews otx-1 (the entitlement now follows it) and has not committed; meanwhile otx-2 expires.
                    try await Self.whileOpen(other, [renewal], blocker: blocker) { held in
                        let expiry = try Self.change(ProjectionTests.event("expire-2", .subscriptionExpired, at: Self.now - 500, subject: "otx-2"))
                        let expiring = Task { try await store.apply([expiry], nowMs: Self.now) }
                        try await waitUntil("the second writer waiting for the first") {
                            try await store.database.read { connection throws(StoreError) in
                                try connection.query("""
                                    SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                                    """).first?.int("n") ?? 0
                            } >= 1
                        }
                        blocker.release()
                        #expect(try await held.value == [.applied, .unchanged])
                        #expect(try await expiring.value == [.applied])
                    }
                    let entitlement = try await store.entitlements(app: "com.example", user: "u-1")?.first
                    #expect(entitlement?.subject == "otx-1")
                    #expect(entitlement?.state == .active)
                    #expect(entitlement?.expiresAtMs == Self.now + 60 * Self.day)
                    #expect(try await store.pendingChanges(limit: 10).last?.active == true, "the last change published says entitled")
                }
            }
        }
    }
}
