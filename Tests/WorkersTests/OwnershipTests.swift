import Config
import Entitlements
import Events
import Foundation
import StoreTestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// `purchases.ownership` decided by the projection, where the event applies (docs/purchases.md): two
/// first claims racing each other cannot both win under `keep`, whatever the requests saw.
@Suite("Ownership decided where it applies")
struct OwnershipTests {
    static let now = Timestamp.now.millisecondsSince1970

    /// A purchase its app reported for `user`, as `POST /v1/purchases` publishes it, with nothing stored yet.
    static func claim(_ user: String, atMs: Int64) -> NormalizedEvent {
        let purchase = VerifiedPurchase(source: .apple, app: "com.example", environment: .production, subject: "otx-race", product: "pro.monthly",
                                        kind: .oneTime, type: .purchaseCompleted, occurredAt: Timestamp(millisecondsSince1970: atMs))
        return PurchaseService.event(for: purchase, user: user, stored: nil, receivedAt: Timestamp(millisecondsSince1970: atMs))
    }

    static func holder(_ store: EntitlementStore) async throws -> String? {
        try await store.purchase(PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "otx-race"))?.user
    }

    @Test("keep: two first claims in one batch, and one after the other: the first to apply holds the purchase, the second changes nothing",
          arguments: Backend.allCases)
    func keepDecidedAtApply(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let first = Self.claim("user-a", atMs: Self.now - 1_000), second = Self.claim("user-b", atMs: Self.now - 1_000)
            // Both requests saw no holder; both events reach the projection.
            let changes = [first, second].compactMap { Projector.change(for: $0, ownership: .keep) }
            #expect(try await store.apply(changes, nowMs: Self.now) == [.applied, .unchanged])
            #expect(try await Self.holder(store) == "user-a")
            #expect(try await store.entitlements(app: "com.example", user: "user-b") == nil)
            // A later claim, even a newer one, does not move it either.
            let later = Self.claim("user-b", atMs: Self.now)
            #expect(try await store.apply([try #require(Projector.change(for: later, ownership: .keep))], nowMs: Self.now) == [.unchanged])
            #expect(try await Self.holder(store) == "user-a")
        }
    }

    @Test("transfer: the later claim moves the purchase; the outbox has the old user's loss and the new user's grant under one event and one purchase, each naming the other user",
          arguments: Backend.allCases)
    func transferMoves(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let first = Self.claim("user-a", atMs: Self.now - 1_000)
            #expect(try await store.apply([try #require(Projector.change(for: first, ownership: .transfer))], nowMs: Self.now) == [.applied])
            try await store.removeChanges(try await store.pendingChanges(limit: 10).map(\.sequence))
            let second = Self.claim("user-b", atMs: Self.now)
            #expect(try await store.apply([try #require(Projector.change(for: second, ownership: .transfer))], nowMs: Self.now) == [.applied])
            #expect(try await Self.holder(store) == "user-b")
            let moved = try await store.pendingChanges(limit: 10)
            #expect(Set(moved.map(\.entitlement.user)) == ["user-a", "user-b"])
            #expect(Set(moved.map(\.eventId)) == [second.id])
            let loss = try #require(moved.first { $0.entitlement.user == "user-a" })
            let grant = try #require(moved.first { $0.entitlement.user == "user-b" })
            #expect(!loss.active && grant.active)
            // Each side names the other, as the relay publishes them.
            #expect(loss.transferredTo == "user-b" && loss.transferredFrom == nil)
            #expect(grant.transferredFrom == "user-a" && grant.transferredTo == nil)
            let ids = PurchaseIds(key: Array("k".utf8))
            #expect(Set(moved.map { ids.id(of: $0.entitlement) }).count == 1)
            let published = String(decoding: EntitlementJSON.encode(grant, ids: ids, catalog: CatalogSettings()), as: UTF8.self)
            #expect(published.contains(#""transferredFrom":"user-a""#))
        }
    }
}
