import Entitlements
import Events
import Store
import StoreTestSupport
import Testing

/// Each purchase's history, as the projection keeps it for the console (`purchase_history`, migration 20).
@Suite("Purchase history")
struct PurchaseHistoryTests {
    static func event(_ id: String, _ type: EventType, user: String, occurredAt: String, expiresAt: String, transaction: String) -> NormalizedEvent {
        NormalizedEvent(id: "apple:\(id)", type: type, source: "/apple/com.example.app", environment: .production, app: "com.example.app",
                        subject: "apple:1000", occurredAt: occurredAt, receivedAt: occurredAt, user: user, product: "pro.monthly",
                        transaction: .init(id: transaction, originalId: "apple:1000", purchasedAt: occurredAt, expiresAt: expiresAt),
                        sourceType: "test")
    }

    static func change(_ event: NormalizedEvent, offset: Int64) throws -> PurchaseChange {
        var change = try #require(Projector.change(for: event))
        change.event = event
        change.history = HistoryNote(position: .init(topic: "tollgate.events", partition: 2, offset: offset))
        return change
    }

    @Test("every event that touched a purchase, in order, with its outcome, the state after it and the entitlements it left; found by transaction, subject and user; pruned by age",
          arguments: Backend.allCases)
    func recordsAndReads(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let renewed = Self.event("renewed", .subscriptionRenewed, user: "alice", occurredAt: "2030-01-01T00:00:00.000Z",
                                     expiresAt: "2030-02-01T00:00:00.000Z", transaction: "apple:2001")
            let stale = Self.event("stale", .subscriptionRenewed, user: "alice", occurredAt: "2029-12-01T00:00:00.000Z",
                                   expiresAt: "2030-01-01T00:00:00.000Z", transaction: "apple:2000")
            let refunded = Self.event("refunded", .purchaseRefunded, user: "alice", occurredAt: "2030-01-05T00:00:00.000Z",
                                      expiresAt: "2030-02-01T00:00:00.000Z", transaction: "apple:2001")
            _ = try await store.apply([try Self.change(renewed, offset: 7), try Self.change(stale, offset: 8)], nowMs: 1_000)
            _ = try await store.apply([try Self.change(refunded, offset: 9)], nowMs: 2_000)
            // A redelivery is recorded once.
            _ = try await store.apply([try Self.change(refunded, offset: 10)], nowMs: 3_000)
            let id = store.purchaseIds.id(source: "apple", app: "com.example.app", environment: "production", subject: "apple:1000")
            let history = try await store.history(ofPurchase: id)
            #expect(history.map(\.eventId) == ["apple:renewed", "apple:stale", "apple:refunded"])
            #expect(history.map(\.outcome) == ["applied", "unchanged", "applied"])
            #expect(history.map(\.stateAfter) == ["active", nil, "refunded"])
            #expect(history.map { $0.position?.offset } == [7, 8, 9])
            #expect(history.first?.entitlements.map(\.active) == [true] && history.last?.entitlements.map(\.active) == [false])
            #expect(history.first?.entitlements.first?.user == "alice" && history.first?.entitlements.first?.product == "pro.monthly")
            #expect(history.last?.eventJSON.contains("\"purchase.refunded\"") == true)
            #expect(try await store.purchaseIds(withTransactionOrSubject: ["apple:2001"]) == [id])
            #expect(try await store.purchaseIds(withTransactionOrSubject: ["apple:1000"]) == [id])
            #expect(try await store.purchaseIds(withTransactionOrSubject: ["apple:9999"]).isEmpty)
            #expect(try await store.appsAndEnvironments(ofUser: "alice").map(\.app) == ["com.example.app"])
            #expect(try await store.historyCounts(sinceMs: 1_500).map(\.count) == [1])
            #expect(try await store.pruneHistory(beforeMs: 1_500) == 2)
            #expect(try await store.history(ofPurchase: id).map(\.eventId) == ["apple:refunded"])
        }
    }

    @Test("a hostile transaction id (a NUL, 5,000 bytes) is kept out of the searchable columns and never fails the batch",
          arguments: Backend.allCases)
    func hostileIds(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            for (index, hostile) in ["apple:\u{0}1", "apple:" + String(repeating: "9", count: 5_000)].enumerated() {
                var event = Self.event("hostile-\(index)", .subscriptionRenewed, user: "eve", occurredAt: "2030-01-01T00:00:00.000Z",
                                       expiresAt: "2030-02-01T00:00:00.000Z", transaction: hostile)
                event.subject = "apple:\(7000 + index)"
                #expect(try await store.apply([try Self.change(event, offset: Int64(index))], nowMs: 1_000) == [.applied])
                let id = store.purchaseIds.id(source: "apple", app: "com.example.app", environment: "production", subject: event.subject)
                let history = try await store.history(ofPurchase: id)
                #expect(history.map(\.outcome) == ["applied"] && history.first?.transactionId == nil)
            }
        }
    }

    @Test("a batch of 250 events is kept whole, in statements of 100 rows", arguments: Backend.allCases)
    func largeBatch(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            var changes: [PurchaseChange] = []
            for n in 0..<250 {
                var event = Self.event("bulk-\(n)", .subscriptionRenewed, user: "user-\(n)", occurredAt: "2030-01-01T00:00:00.000Z",
                                       expiresAt: "2030-02-01T00:00:00.000Z", transaction: "apple:t\(n)")
                event.subject = "apple:bulk-\(n)"
                changes.append(try Self.change(event, offset: Int64(n)))
            }
            _ = try await store.apply(changes, nowMs: 1_000)
            #expect(try await store.historyCounts(sinceMs: 0).map(\.count) == [250])
            let last = store.purchaseIds.id(source: "apple", app: "com.example.app", environment: "production", subject: "apple:bulk-249")
            #expect(try await store.history(ofPurchase: last).map { $0.position?.offset } == [249])
        }
    }

    @Test("a checkout id finds the purchase its payment made (its provider names it by the checkout's reference); another checkout's does not",
          arguments: Backend.allCases)
    func checkoutSearch(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let paid = NormalizedEvent(id: "citcon:pay-1", type: .purchaseCompleted, source: "/citcon/acct", environment: .sandbox, app: "acct",
                                       subject: "ref-77", occurredAt: "2030-01-01T00:00:00.000Z", receivedAt: "2030-01-01T00:00:00.000Z",
                                       user: "dana", product: "tweak.lifetime", sourceType: "test")
            _ = try await store.apply([try Self.change(paid, offset: 1)], nowMs: 1_000)
            _ = try await store.database.transaction { connection throws(StoreError) in
                for (id, reference, provider) in [("chk_paid", "ref-77", "citcon"), ("chk_unpaid", "ref-78", "citcon"), ("chk_other", "ref-77", "alipayplus")] {
                    try connection.execute("""
                        INSERT INTO checkouts (id, app, user_id, product, amount_minor, currency, provider, account, reference, environment, state,
                                               created_at_ms, expires_at_ms, updated_at_ms)
                        VALUES ($1, 'acct', 'dana', 'tweak.lifetime', 199, 'USD', $3, 'acct', $2, 'sandbox', 'paid', 0, 1, 0)
                        """, [.text(id), .text(reference), .text(provider)])
                }
            }
            let id = store.purchaseIds.id(source: "citcon", app: "acct", environment: "sandbox", subject: "ref-77")
            #expect(try await store.purchaseIds(forCheckout: "chk_paid") == [id])
            #expect(try await store.purchaseIds(forCheckout: "chk_unpaid").isEmpty)
            // Another provider's checkout with the same reference is not this purchase's.
            #expect(try await store.purchaseIds(forCheckout: "chk_other").isEmpty)
            #expect(try await store.purchaseIds(forCheckout: "chk_unknown").isEmpty)
        }
    }

    @Test("without a history note (no console), nothing is kept", arguments: Backend.allCases)
    func notKeptWithoutConsole(_ backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let event = Self.event("renewed", .subscriptionRenewed, user: "bob", occurredAt: "2030-01-01T00:00:00.000Z",
                                   expiresAt: "2030-02-01T00:00:00.000Z", transaction: "apple:3001")
            var change = try #require(Projector.change(for: event))
            change.event = event
            _ = try await store.apply([change], nowMs: 1_000)
            #expect(try await store.historyCounts(sinceMs: 0).isEmpty)
        }
    }
}
