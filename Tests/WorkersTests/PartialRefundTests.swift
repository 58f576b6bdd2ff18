import Config
import Entitlements
import Events
import Foundation
import StoreTestSupport
import Testing
@testable import Merchant

/// Apple's prorated refunds (`revocationType` `REFUND_PRORATED`, `revocationPercentage`): a one-time
/// purchase, or several units, keeps what the refund did not take back; a full refund, a family revoke, a
/// subscription's prorated refund and a share that leaves nothing end it; a reversed refund restores it.
/// The remaining units travel on the entitlement and its `tollgate.entitlements` value. Both backends.
@Suite("Partial and prorated refunds")
struct PartialRefundTests {
    static let day: Int64 = 86_400_000
    static let now = Timestamp.now.millisecondsSince1970

    static func event(_ id: String, _ type: EventType, at: Int64, subject: String = "tx-1", product: String = "coins.100", quantity: Int?,
                      revocation: NormalizedEvent.Transaction.Revocation? = nil, share: Int? = nil, expiresMs: Int64? = nil) -> NormalizedEvent {
        NormalizedEvent(
            id: id, type: type, source: "/apple/com.example", environment: .production, app: "com.example", subject: subject,
            occurredAt: Timestamp(millisecondsSince1970: at).rfc3339, receivedAt: Timestamp(millisecondsSince1970: at).rfc3339,
            user: "u-1", product: product,
            transaction: NormalizedEvent.Transaction(expiresAt: expiresMs.map { Timestamp(millisecondsSince1970: $0).rfc3339 },
                                                     revokedAt: revocation.map { _ in Timestamp(millisecondsSince1970: at).rfc3339 },
                                                     quantity: quantity, revocationType: revocation, revocationPercentage: share,
                                                     appTransactionId: "7042895722"),
            sourceType: type.rawValue)
    }

    static func entitlement(_ store: EntitlementStore, product: String = "coins.100") async throws -> Entitlement? {
        try await store.entitlements(app: "com.example", user: "u-1")?.first { $0.product == product }
    }

    static func apply(_ store: EntitlementStore, _ event: NormalizedEvent) async throws {
        #expect(try await store.apply([try #require(Projector.change(for: event))], nowMs: now) == [.applied])
    }

    @Test("three units, a third refunded: two remain and entitle; reversed: three; refunded in full: none", arguments: Backend.allCases)
    func units(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let bought = Self.now - 2 * Self.day
            try await Self.apply(store, Self.event("p1", .purchaseCompleted, at: bought, quantity: 3))
            #expect(try await Self.entitlement(store)?.quantity == 3)
            let key = PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: "tx-1")
            #expect(try await store.purchase(key).map { $0.quantity == 3 && $0.appTransactionId == "7042895722" } == true)
            try await Self.apply(store, Self.event("r1", .purchaseRefunded, at: bought + 1_000, quantity: 3, revocation: .refundProrated, share: 33_333))
            let partly = try #require(try await Self.entitlement(store))
            #expect(partly.quantity == 2 && partly.isActive(atMs: Self.now) && partly.state == .active)
            // A later notification about the same transaction (it carries the refund) gives nothing back.
            try await Self.apply(store, Self.event("d1", .purchaseRefundDeclined, at: bought + 1_500, quantity: 3, revocation: .refundProrated, share: 33_333))
            #expect(try await Self.entitlement(store)?.quantity == 2)
            try await Self.apply(store, Self.event("r2", .purchaseRefundReversed, at: bought + 2_000, quantity: 3))
            #expect(try await Self.entitlement(store)?.quantity == 3)
            try await Self.apply(store, Self.event("r3", .purchaseRefunded, at: bought + 3_000, quantity: 3, revocation: .refundFull, share: 100_000))
            let refunded = try #require(try await Self.entitlement(store))
            #expect(refunded.quantity == 0 && !refunded.isActive(atMs: Self.now) && refunded.state == .refunded)

            // Each change on its way to tollgate.entitlements says how many units remain.
            let changes = try await store.pendingChanges(limit: 10)
            #expect(changes.map(\.entitlement.quantity) == [3, 2, 3, 0], "the declined refund changed nothing")
            #expect(changes.map(\.active) == [true, true, true, false])
            let ids = PurchaseIds(key: Array(repeating: 7, count: 32))
            let value = String(decoding: EntitlementJSON.encode(changes[1], ids: ids, catalog: CatalogSettings()), as: UTF8.self)
            #expect(value.contains(#""quantity":2"#) && value.contains(#""active":true"#), "\(value)")
        }
    }

    @Test("a chargeback, and a voided purchase as the store's API reports it, leave no units")
    func noUnitsAfterAnEnd() throws {
        func applied(_ event: NormalizedEvent, snapshot: PurchaseSnapshot? = nil, to current: Purchase?) throws -> Purchase {
            let change = try #require(Projector.change(for: event, snapshot: snapshot))
            return try #require(change.update(current))
        }
        let held = try applied(Self.event("k1", .purchaseCompleted, at: Self.now - 2_000, subject: "charged", quantity: 5), to: nil)
        #expect(held.quantity == 5)
        let chargeback = try applied(Self.event("k2", .purchaseChargeback, at: Self.now - 1_000, subject: "charged", quantity: nil), to: held)
        #expect(chargeback.state == .revoked && chargeback.quantity == 0)
        let voided = try applied(Self.event("k3", .purchaseRefunded, at: Self.now - 1_000, subject: "charged", quantity: nil),
                                 snapshot: PurchaseSnapshot(kind: .oneTime, state: .refunded), to: held)
        #expect(voided.state == .refunded && voided.quantity == 0)
    }

    @Test("the app's own notices (an external purchase token, a rescinded consent) make no purchase")
    func notices() {
        for type in [EventType.externalPurchaseTokenCreated, .externalPurchaseTokenActive, .externalPurchaseTokenUnreported, .consentRescinded] {
            #expect(Projector.change(for: Self.event("n-\(type.rawValue)", type, at: Self.now, subject: "external:SANDBOX_1", quantity: nil)) == nil)
        }
        #expect(Projector.change(for: Self.event("n-completed", .purchaseCompleted, at: Self.now, quantity: 1)) != nil)
    }

    @Test("what ends a purchase: a family revoke, a subscription's prorated refund, a share of one unit rounding to it; what does not: a share rounding to none",
          arguments: Backend.allCases)
    func ends(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store async throws in
            let at = Self.now - Self.day
            // One unit, 40% refunded on consumption: the unit stays (its share rounds to none).
            try await Self.apply(store, Self.event("a1", .purchaseCompleted, at: at, subject: "one", product: "gems", quantity: 1))
            try await Self.apply(store, Self.event("a2", .purchaseRefunded, at: at + 1, subject: "one", product: "gems", quantity: 1,
                                                   revocation: .refundProrated, share: 40_000))
            #expect(try await Self.entitlement(store, product: "gems").map { $0.isActive(atMs: Self.now) && $0.quantity == 1 } == true)
            // 60%: it rounds to the unit, and nothing remains.
            try await Self.apply(store, Self.event("a3", .purchaseRefunded, at: at + 2, subject: "one", product: "gems", quantity: 1,
                                                   revocation: .refundProrated, share: 60_000))
            #expect(try await Self.entitlement(store, product: "gems").map { !$0.isActive(atMs: Self.now) && $0.state == .refunded } == true)
            // A family member's access revoked (Apple's REVOKE): ended, no units.
            try await Self.apply(store, Self.event("b1", .purchaseCompleted, at: at, subject: "fam", product: "pro.lifetime", quantity: 1))
            try await Self.apply(store, Self.event("b2", .subscriptionRevoked, at: at + 1, subject: "fam", product: "pro.lifetime", quantity: 1,
                                                   revocation: .familyRevoke))
            #expect(try await Self.entitlement(store, product: "pro.lifetime").map { !$0.isActive(atMs: Self.now) && $0.quantity == 0 } == true)
            // A figure no store sells (a sender's 2^40) says nothing about units, on either backend; a reversal
            // without a quantity leaves the units unknown rather than none.
            try await Self.apply(store, Self.event("q1", .purchaseCompleted, at: at, subject: "huge", product: "gold", quantity: 1 << 40))
            #expect(try await Self.entitlement(store, product: "gold").map { $0.quantity == nil && $0.isActive(atMs: Self.now) } == true)
            try await Self.apply(store, Self.event("q2", .purchaseRefunded, at: at + 1, subject: "huge", product: "gold", quantity: 2, revocation: .refundFull))
            try await Self.apply(store, Self.event("q3", .purchaseRefundReversed, at: at + 2, subject: "huge", product: "gold", quantity: nil))
            #expect(try await Self.entitlement(store, product: "gold").map { $0.quantity == nil && $0.isActive(atMs: Self.now) } == true)
            // A subscription's prorated refund refunds the time it had left: it ends.
            try await Self.apply(store, Self.event("c1", .subscriptionStarted, at: at, subject: "sub", product: "pro.monthly", quantity: 1,
                                                   expiresMs: Self.now + 29 * Self.day))
            try await Self.apply(store, Self.event("c2", .purchaseRefunded, at: at + 1, subject: "sub", product: "pro.monthly", quantity: 1,
                                                   revocation: .refundProrated, share: 96_000, expiresMs: Self.now + 29 * Self.day))
            #expect(try await Self.entitlement(store, product: "pro.monthly").map { !$0.isActive(atMs: Self.now) && $0.state == .refunded } == true)
        }
    }
}
