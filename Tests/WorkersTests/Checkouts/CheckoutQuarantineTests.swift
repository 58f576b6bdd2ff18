import Events
import Foundation
import Store
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
@testable import Entitlements
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A payment that names a checkout but does not match it is quarantined itself, not the checkout
/// (docs/checkouts.md): whoever knows a reference can no longer lock the owner's checkout by paying it
/// a cent. Matched here through `CheckoutMatcher` as the projection calls it, on both stores.
@Suite("Checkouts: a payment that does not match is quarantined, the checkout stays payable")
struct CheckoutQuarantineTests {
    static let user = CheckoutTests.user
    static let product = CheckoutTests.product

    struct Scene {
        let fixture: CheckoutFixture
        let store: EntitlementStore
        let api: CheckoutAPI
        let matcher: CheckoutMatcher
        let metrics: RecordingMetrics
        var records: CheckoutRecords { matcher.records }

        /// A Citcon checkout of 19.99 USD: its id and reference.
        func citconCheckout() async throws -> (id: String, reference: String) {
            let created = try await api.post(CheckoutTests.body(app: CheckoutFixture.citconAccount, provider: "citcon"))
            return (try #require(created.string("id")), try #require(created.string("reference")))
        }

        func ipn(_ reference: String, id: String, amount: String = "1999", currency: String = "USD") async throws -> NormalizedEvent {
            try #require(try await fixture.citconIPN(reference: reference, id: id, amount: amount, currency: currency).first)
        }

        func quarantined(_ reason: QuarantinedPayment.Reason) -> Int64 {
            metrics.total("tollgate_checkout_payments_quarantined_total", ["provider": "citcon", "reason": reason.rawValue])
        }
    }

    static func withScene(_ backend: Backend, _ body: (Scene) async throws -> Void) async throws {
        let fixture = try await CheckoutFixture.make(antomBaseURL: "http://127.0.0.1:9")
        try await TestDatabases.withStore(backend) { store in
            let metrics = RecordingMetrics()
            let api = try fixture.api(store: store, metrics: MerchantMetrics(factory: metrics))
            let matcher = CheckoutMatcher(records: api.service.records, providers: api.service.providers, metrics: MerchantMetrics(factory: metrics), logger: api.logger,
                                          now: { Timestamp.now.millisecondsSince1970 })
            try await body(Scene(fixture: fixture, store: store, api: api, matcher: matcher, metrics: metrics))
        }
    }

    @Test("a wrong amount, currency, environment or no signed amount entitles nobody and is kept with its reason; the checkout stays pending and the owner's right payment then pays it",
          arguments: Backend.allCases)
    func wrongPaymentsThenTheRightOne(_ backend: Backend) async throws {
        try await Self.withScene(backend) { scene in
            let (id, reference) = try await scene.citconCheckout()
            var sandbox = try await scene.ipn(reference, id: "ch_sandbox")
            sandbox.environment = .sandbox
            var unsigned = try await scene.ipn(reference, id: "ch_unsigned")
            unsigned.price = nil
            let wrong: [(NormalizedEvent, QuarantinedPayment.Reason)] = [
                (try await scene.ipn(reference, id: "ch_cent", amount: "1"), .amountMismatch),
                (try await scene.ipn(reference, id: "ch_eur", currency: "EUR"), .currencyMismatch),
                (sandbox, .environmentMismatch),
                (unsigned, .amountMissing),
            ]
            for (event, reason) in wrong {
                #expect(try await scene.matcher.project(event, into: scene.store) == nil, "\(reason)")
                #expect(try await scene.api.get(id).string("state") == "pending", "\(reason)")
                #expect(scene.quarantined(reason) == 1, "\(reason)")
            }
            // Processed again (a redelivery): kept and counted once.
            #expect(try await scene.matcher.project(wrong[0].0, into: scene.store) == nil)
            #expect(scene.quarantined(.amountMismatch) == 1)
            let kept = try await scene.records.quarantinedPayments(checkoutId: id)
            #expect(kept.map(\.eventId).sorted() == wrong.map(\.0.id).sorted())
            #expect(Set(kept.map(\.reason)) == Set(wrong.map(\.1)))
            let cent = try #require(kept.first { $0.reason == .amountMismatch })
            // One unit on both sides: the notified cent and the catalog price, as the currency is written.
            #expect(cent.detail == "amount_mismatch: notified 0.01 USD, expected 19.99 USD" && cent.paymentId == "ch_cent", "\(cent.detail)")
            #expect(cent.user == Self.user && cent.product == Self.product && cent.reference == reference && cent.provider == .citcon)

            // The owner's payment, of the checkout's amount: paid, and the event entitles the owner.
            let paid = try #require(try await scene.matcher.project(try await scene.ipn(reference, id: "ch_owner"), into: scene.store))
            #expect(paid.user == Self.user && paid.product == Self.product)
            #expect(try await scene.api.get(id).string("state") == "paid")
            #expect(scene.metrics.total("tollgate_checkout_notifications_total", ["provider": "citcon", "outcome": "paid"]) == 1)

            // A wrong payment after it was paid changes nothing but is kept too.
            #expect(try await scene.matcher.project(try await scene.ipn(reference, id: "ch_late", amount: "5"), into: scene.store) == nil)
            #expect(try await scene.api.get(id).string("state") == "paid")
            #expect(try await scene.records.quarantinedPayments(checkoutId: id).count == wrong.count + 1)
            #expect(scene.metrics.total("tollgate_checkout_notifications_total", ["provider": "citcon", "outcome": "quarantined"]) == 5)
        }
    }

    @Test("a payment naming the reference under another account names no checkout: it entitles nobody and quarantines nothing")
    func anotherAccount() async throws {
        try await Self.withScene(.sqlite) { scene in
            let (id, reference) = try await scene.citconCheckout()
            var foreign = try await scene.ipn(reference, id: "ch_foreign")
            foreign.app = "shop-other"
            let passed = try #require(try await scene.matcher.project(foreign, into: scene.store))
            #expect(passed.user == nil && passed.product == nil)
            #expect(try await scene.records.quarantinedPayments(checkoutId: id).isEmpty)
            #expect(try await scene.api.get(id).string("state") == "pending")
        }
    }

    @Test("migration 11: a checkout quarantined before is pending again, its reason kept as a quarantined payment", arguments: Backend.allCases)
    func migration(_ backend: Backend) async throws {
        let now = Timestamp.now.millisecondsSince1970
        try await TestDatabases.withURL(backend) { url in
            let old = try await SQLDatabase.open(url: url, logger: TestDatabases.logger)
            do {
                #expect(try await old.migrate(Array(EntitlementSchema.migrations.prefix(8))) == Array(1...8))
                _ = try await old.transaction { connection throws(StoreError) in
                    for (id, state, reason) in [("co_locked", "quarantined", "amount_mismatch: notified 10000 micros, expected 1999 minor units"),
                                                ("co_odd", "quarantined", "no code here"), ("co_paid", "paid", "")] {
                        try connection.execute("""
                            INSERT INTO checkouts (id, app, user_id, product, amount_minor, currency, provider, account, reference, environment,
                                                   state, quarantine_reason, created_at_ms, expires_at_ms, updated_at_ms)
                            VALUES ($1, 'shop-us', 'user-42', 'pro.lifetime', 1999, 'USD', 'citcon', 'shop-us', $2, 'production', $3, $4, $5, $6, $5)
                            """, [.text(id), .text("tg-" + id), .text(state), reason.isEmpty ? .null : .text(reason), .int(now), .int(now + 60_000)])
                    }
                }
            } catch {
                await old.close()
                throw error
            }
            await old.close()

            let store = try await EntitlementStore.open(url: url, logger: TestDatabases.logger)
            do {
                let records = CheckoutRecords(store: store)
                #expect(try await records.find(id: "co_locked")?.state == .pending)
                #expect(try await records.find(id: "co_odd")?.state == .pending)
                #expect(try await records.find(id: "co_paid")?.state == .paid)
                let locked = try await records.quarantinedPayments(checkoutId: "co_locked")
                #expect(locked.map(\.reason) == [.amountMismatch])
                #expect(locked.first?.detail == "amount_mismatch: notified 10000 micros, expected 1999 minor units")
                #expect(locked.first?.eventId == "migration-11:co_locked" && locked.first?.user == "user-42")
                #expect(try await records.quarantinedPayments(checkoutId: "co_odd").map(\.reason) == [.unknown])
                #expect(try await records.quarantinedPayments(checkoutId: "co_paid").isEmpty)
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        }
    }
}
