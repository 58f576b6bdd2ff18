import Entitlements
import Events
import Foundation
import StoreTestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Events projected into a real store, the same cases on SQLite and PostgreSQL.
@Suite("Projection into the store")
struct ProjectionTests {
    static let day: Int64 = 86_400_000
    static let now = Timestamp.now.millisecondsSince1970

    static func event(_ id: String, _ type: EventType, at occurredMs: Int64, expiresMs: Int64? = nil, subject: String = "otx-1",
                      user: String? = "u-1", product: String? = "pro.monthly", source: String = "/apple/com.example",
                      grace: Int64? = nil, environment: NormalizedEvent.Environment = .production) -> NormalizedEvent {
        NormalizedEvent(
            id: id, type: type, source: source, environment: environment, app: "com.example", subject: subject,
            occurredAt: Timestamp(millisecondsSince1970: occurredMs).rfc3339, receivedAt: Timestamp(millisecondsSince1970: occurredMs).rfc3339,
            user: user, product: product,
            transaction: NormalizedEvent.Transaction(expiresAt: expiresMs.map { Timestamp(millisecondsSince1970: $0).rfc3339 }),
            subscription: NormalizedEvent.Subscription(gracePeriodExpiresAt: grace.map { Timestamp(millisecondsSince1970: $0).rfc3339 }),
            sourceType: type.rawValue)
    }

    static func apply(_ store: EntitlementStore, _ events: NormalizedEvent...) async throws -> [ApplyOutcome] {
        try await store.apply(events.compactMap { Projector.change(for: $0) }, nowMs: now)
    }

    static func active(_ store: EntitlementStore, user: String = "u-1") async throws -> [String] {
        try await store.entitlements(app: "com.example", user: user)?.filter { $0.isActive(atMs: now) }.map(\.product) ?? []
    }

    @Test("a subscription from start to renewal to expiry: entitled, still entitled later, then not; each change in the outbox",
          arguments: Backend.allCases)
    func lifecycle(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let start = Self.now - 40 * Self.day
            #expect(try await Self.apply(store, Self.event("e1", .subscriptionStarted, at: start, expiresMs: start + 30 * Self.day)) == [.applied])
            // Its first period is over by now: no entitlement until the renewal arrives.
            #expect(try await Self.active(store).isEmpty)
            let renewal = start + 30 * Self.day
            #expect(try await Self.apply(store, Self.event("e2", .subscriptionRenewed, at: renewal, expiresMs: renewal + 30 * Self.day)) == [.applied])
            #expect(try await Self.active(store) == ["pro.monthly"])
            #expect(try await store.entitlements(app: "com.example", user: "u-1")?.first?.expiresAtMs == renewal + 30 * Self.day)
            #expect(try await Self.apply(store, Self.event("e3", .subscriptionExpired, at: Self.now - 1_000)) == [.applied])
            #expect(try await Self.active(store).isEmpty)
            #expect(try await store.purchase(PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-1"))?.state == .expired)

            let changes = try await store.pendingChanges(limit: 10)
            #expect(changes.map(\.entitlement.state) == [.active, .active, .expired])
            #expect(changes.map(\.active) == [false, true, false])
            #expect(changes.map(\.eventId) == ["e1", "e2", "e3"])
            #expect(changes.allSatisfy { $0.entitlement.topicKey == "com.example/production/u-1/pro.monthly" })
            #expect(changes.map(\.sequence) == changes.map(\.sequence).sorted())
        }
    }

    @Test("the same event twice is applied once, even in one batch", arguments: Backend.allCases)
    func duplicate(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let e = Self.event("dup", .subscriptionStarted, at: Self.now - Self.day, expiresMs: Self.now + 29 * Self.day)
            #expect(try await Self.apply(store, e, e) == [.applied, .duplicate])
            #expect(try await Self.apply(store, e) == [.duplicate])
            #expect(try await store.pendingChanges(limit: 10).count == 1)
            #expect(try await store.hasProcessed(eventId: "dup"))
        }
    }

    @Test("a late renewal older than the stored expiry does not bring the entitlement back", arguments: Backend.allCases)
    func outOfOrder(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let expired = Self.event("late-2", .subscriptionExpired, at: Self.now - Self.day)
            let renewed = Self.event("late-1", .subscriptionRenewed, at: Self.now - 2 * Self.day, expiresMs: Self.now + 28 * Self.day)
            #expect(try await Self.apply(store, expired) == [.applied])
            #expect(try await Self.apply(store, renewed) == [.unchanged])
            #expect(try await Self.active(store).isEmpty)
            // Recorded as processed all the same: a redelivery is a duplicate.
            #expect(try await Self.apply(store, renewed) == [.duplicate])
        }
    }

    @Test("billing issue with a grace period keeps the entitlement until the grace ends", arguments: Backend.allCases)
    func gracePeriod(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            _ = try await Self.apply(store, Self.event("g1", .subscriptionStarted, at: Self.now - 31 * Self.day, expiresMs: Self.now - Self.day))
            _ = try await Self.apply(store, Self.event("g2", .subscriptionBillingIssue, at: Self.now - Self.day, grace: Self.now + 5 * Self.day))
            #expect(try await Self.active(store) == ["pro.monthly"])
            _ = try await Self.apply(store, Self.event("g3", .subscriptionBillingIssue, at: Self.now - 1_000, subject: "otx-2"))
            #expect(try await store.purchase(PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-2"))?.state == .billingRetry)
        }
    }

    @Test("a refunded one-time purchase ends its entitlement; an unknown user is nil (404)", arguments: Backend.allCases)
    func oneTime(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            _ = try await Self.apply(store, Self.event("o1", .purchaseCompleted, at: Self.now - Self.day, subject: "ord-1", product: "coins"))
            #expect(try await Self.active(store) == ["coins"])
            _ = try await Self.apply(store, Self.event("o2", .purchaseRefunded, at: Self.now - 1_000, subject: "ord-1", product: "coins"))
            #expect(try await Self.active(store).isEmpty)
            #expect(try await store.entitlements(app: "com.example", user: "nobody") == nil)
        }
    }

    @Test("a Google upgrade (linkedPurchaseToken) supersedes the old purchase and carries its user over", arguments: Backend.allCases)
    func upgrade(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let source = "/google/com.example"
            let old = Self.event("g-old", .subscriptionStarted, at: Self.now - 10 * Self.day, subject: "token-basic", source: source)
            let oldState = PurchaseSnapshot(kind: .subscription, state: .active, user: "u-1", product: "basic", expiresAtMs: Self.now + 20 * Self.day)
            _ = try await store.apply([try #require(Projector.change(for: old, snapshot: oldState))], nowMs: Self.now)
            #expect(try await Self.active(store) == ["basic"])

            let new = Self.event("g-new", .subscriptionStarted, at: Self.now - 1_000, subject: "token-premium", user: nil, source: source)
            let newState = PurchaseSnapshot(kind: .subscription, state: .active, user: nil, product: "premium",
                                            expiresAtMs: Self.now + 30 * Self.day, linkedPurchaseToken: "token-basic")
            #expect(try await store.apply([try #require(Projector.change(for: new, snapshot: newState))], nowMs: Self.now) == [.applied])
            #expect(try await Self.active(store) == ["premium"])
            let replaced = try await store.purchase(PurchaseKey(source: "google", app: "com.example", environment: "production", subject: "token-basic"))
            #expect(replaced?.state == .superseded)
            #expect(replaced?.supersededBy == "token-premium")
            #expect(try await store.purchase(PurchaseKey(source: "google", app: "com.example", environment: "production", subject: "token-premium"))?.user == "u-1")
            let last = try await store.pendingChanges(limit: 10).suffix(2)
            #expect(Set(last.map(\.entitlement.product)) == ["basic", "premium"])
        }
    }
}
