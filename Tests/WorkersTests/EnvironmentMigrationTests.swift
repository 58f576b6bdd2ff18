@testable import Entitlements
import Events
import Store
import StoreTestSupport
import Testing

/// Schema version 2 puts the environment into the purchase and entitlement keys of a store written by
/// version 1: existing rows are kept, each entitlement takes the environment of its deciding purchase.
@Suite("Environment migration")
struct EnvironmentMigrationTests {
    static let day: Int64 = 86_400_000

    @Test("a version 1 store keeps its rows: production stays production, a sandbox-decided entitlement becomes sandbox",
          arguments: Backend.allCases)
    func upgrade(backend: Backend) async throws {
        let now = Timestamp.now.millisecondsSince1970
        let expires = now + 20 * Self.day
        try await TestDatabases.withURL(backend) { url in
            let old = try await SQLDatabase.open(url: url, logger: TestDatabases.logger)
            do {
                #expect(try await old.migrate(Array(EntitlementSchema.migrations.prefix(1))) == [1])
                _ = try await old.transaction { connection throws(StoreError) in
                    for (subject, user, environment) in [("otx-1", "u-1", "production"), ("otx-2", "u-2", "sandbox")] {
                        try connection.execute("""
                            INSERT INTO purchases (source, app, subject, kind, state, user_id, product, environment, expires_at_ms,
                                                   last_event_at_ms, last_event_id, last_event_type, updated_at_ms)
                            VALUES ('apple', 'com.example', $1, 'subscription', 'active', $2, 'pro', $3, $4, $5, $6,
                                    'subscription.started', $5)
                            """, [.text(subject), .text(user), .text(environment), .int(expires), .int(now - Self.day), .text("e-" + subject)])
                    }
                    // u-3's purchase is gone: its entitlement cannot say otherwise, so it stays production.
                    for (subject, user) in [("otx-1", "u-1"), ("otx-2", "u-2"), ("otx-gone", "u-3")] {
                        try connection.execute("""
                            INSERT INTO entitlements (app, user_id, product, source, subject, state, expires_at_ms, updated_at_ms)
                            VALUES ('com.example', $1, 'pro', 'apple', $2, 'active', $3, $4)
                            """, [.text(user), .text(subject), .int(expires), .int(now)])
                    }
                    try connection.execute("""
                        INSERT INTO entitlement_outbox (app, user_id, product, source, subject, state, active, expires_at_ms,
                                                        changed_at_ms, event_id)
                        VALUES ('com.example', 'u-2', 'pro', 'apple', 'otx-2', 'active', 1, $1, $2, 'e-otx-2')
                        """, [.int(expires), .int(now)])
                }
            } catch {
                await old.close()
                throw error
            }
            await old.close()

            let store = try await EntitlementStore.open(url: url, logger: TestDatabases.logger)
            do {
                let key = { (subject: String, environment: String) in
                    PurchaseKey(source: "apple", app: "com.example", environment: environment, subject: subject)
                }
                #expect(try await store.purchase(key("otx-1", "production"))?.user == "u-1")
                #expect(try await store.purchase(key("otx-2", "sandbox"))?.user == "u-2")
                #expect(try await store.purchase(key("otx-2", "production")) == nil)

                #expect(try await store.entitlements(app: "com.example", user: "u-1")?.map(\.subject) == ["otx-1"])
                #expect(try await store.entitlements(app: "com.example", user: "u-2") == nil)
                #expect(try await store.entitlements(app: "com.example", user: "u-2", environment: "sandbox")?.map(\.environment) == ["sandbox"])
                let pending = try await store.pendingChanges(limit: 10)
                #expect(pending.map(\.entitlement.topicKey) == ["com.example/sandbox/u-2/pro"])

                // The upgraded tables take new changes under the new keys: a sandbox purchase with the same
                // subject as a production one is a purchase of its own.
                let event = NormalizedEvent(
                    id: "apple:after-upgrade", type: .subscriptionRenewed, source: "/apple/com.example", environment: .sandbox,
                    app: "com.example", subject: "otx-1", occurredAt: Timestamp(millisecondsSince1970: now).rfc3339,
                    receivedAt: Timestamp(millisecondsSince1970: now).rfc3339, user: "u-1", product: "pro",
                    transaction: NormalizedEvent.Transaction(expiresAt: Timestamp(millisecondsSince1970: now + 40 * Self.day).rfc3339),
                    sourceType: "DID_RENEW")
                #expect(try await store.apply([try #require(Projector.change(for: event))], nowMs: now) == [.applied])
                #expect(try await store.purchase(key("otx-1", "production"))?.expiresAtMs == expires)
                #expect(try await store.purchase(key("otx-1", "sandbox"))?.expiresAtMs == now + 40 * Self.day)
                #expect(try await store.entitlements(app: "com.example", user: "u-1")?.map(\.expiresAtMs) == [expires])
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        }
    }
}
