import Entitlements
import Events
import StoreTestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// `EntitlementStore.apply` takes a batch in a few set-based phases; these cases hold it to the result of
/// applying the same changes one per call: outcomes, purchases, entitlements and the outbox's rows (their
/// order, `active` flags and event ids). On SQLite and PostgreSQL.
@Suite("A batch applies as its changes one by one")
struct BatchedApplyTests {
    static let day = ProjectionTests.day
    static let now = ProjectionTests.now

    /// What a store ends up holding, sequences aside (they differ between stores).
    struct Result: Equatable {
        var outcomes: [ApplyOutcome]
        var changes: [String]
        var entitlements: [String: [Entitlement]]
        var purchases: [PurchaseKey: Purchase]
    }

    static func change(_ event: NormalizedEvent, _ snapshot: PurchaseSnapshot? = nil) throws -> PurchaseChange {
        try #require(Projector.change(for: event, snapshot: snapshot))
    }

    /// A change that makes the purchase an active subscription of `user` to `product`, whatever it was.
    static func started(_ id: String, _ key: PurchaseKey, user: String?, product: String, at occurredMs: Int64 = now - day) -> PurchaseChange {
        PurchaseChange(eventId: id, key: key) { current in
            var next = current ?? Purchase(key: key, kind: .subscription, state: .active, lastEventAtMs: occurredMs,
                                           lastEventId: id, lastEventType: "subscription.started")
            next.state = .active
            next.user = user ?? next.user
            next.product = product
            next.expiresAtMs = now + 29 * day
            next.lastEventAtMs = occurredMs
            next.lastEventId = id
            return next
        }
    }

    static func snapshot(_ store: EntitlementStore, outcomes: [ApplyOutcome], users: [(app: String, user: String)],
                         keys: [PurchaseKey]) async throws -> Result {
        let changes = try await store.pendingChanges(limit: 1_000)
        #expect(changes.map(\.sequence) == changes.map(\.sequence).sorted())
        var entitlements: [String: [Entitlement]] = [:]
        for (app, user) in users { entitlements["\(app)/\(user)"] = try await store.entitlements(app: app, user: user) ?? [] }
        var purchases: [PurchaseKey: Purchase] = [:]
        for key in keys { purchases[key] = try await store.purchase(key) }
        return Result(outcomes: outcomes,
                      changes: changes.map { "\($0.eventId) \($0.entitlement.topicKey) \($0.entitlement.subject) \($0.entitlement.state) active=\($0.active)" },
                      entitlements: entitlements, purchases: purchases)
    }

    /// Applies `setup` one per call to two stores, then `changes` in one batch to one and one per call to
    /// the other; expects the same result from both and returns it.
    static func batchedAndOneByOne(_ backend: Backend, setup: [PurchaseChange] = [], _ changes: [PurchaseChange],
                                   users: [(app: String, user: String)], keys: [PurchaseKey]) async throws -> Result {
        try await TestDatabases.withStore(backend) { batched async throws in
            try await TestDatabases.withStore(backend) { single async throws in
                for change in setup {
                    _ = try await batched.apply([change], nowMs: now)
                    _ = try await single.apply([change], nowMs: now)
                }
                let batchOutcomes = try await batched.apply(changes, nowMs: now)
                var singleOutcomes: [ApplyOutcome] = []
                for change in changes { singleOutcomes += try await single.apply([change], nowMs: now) }
                let fromBatch = try await snapshot(batched, outcomes: batchOutcomes, users: users, keys: keys)
                let fromSingles = try await snapshot(single, outcomes: singleOutcomes, users: users, keys: keys)
                #expect(fromBatch == fromSingles)
                return fromBatch
            }
        }
    }

    static let user1 = [(app: "com.example", user: "u-1")]
    static func apple(_ subject: String) -> PurchaseKey { PurchaseKey(source: "apple", app: "com.example", environment: "production", subject: subject) }

    @Test("start, renewal and expiry of one subscription in one batch: three outbox rows, as one by one", arguments: Backend.allCases)
    func lifecycle(backend: Backend) async throws {
        let start = Self.now - 40 * Self.day, renewal = start + 30 * Self.day
        let result = try await Self.batchedAndOneByOne(backend, [
            try Self.change(ProjectionTests.event("e1", .subscriptionStarted, at: start, expiresMs: start + 30 * Self.day)),
            try Self.change(ProjectionTests.event("e2", .subscriptionRenewed, at: renewal, expiresMs: renewal + 30 * Self.day)),
            try Self.change(ProjectionTests.event("e3", .subscriptionExpired, at: Self.now - 1_000)),
        ], users: Self.user1, keys: [Self.apple("otx-1")])
        #expect(result.outcomes == [.applied, .applied, .applied])
        #expect(result.changes == [
            "e1 com.example/production/u-1/pro.monthly otx-1 active active=false",
            "e2 com.example/production/u-1/pro.monthly otx-1 active active=true",
            "e3 com.example/production/u-1/pro.monthly otx-1 expired active=false",
        ])
        #expect(result.purchases[Self.apple("otx-1")]?.state == .expired)
    }

    @Test("start then expiry in one batch: two outbox rows, active then not", arguments: Backend.allCases)
    func startThenExpiry(backend: Backend) async throws {
        let result = try await Self.batchedAndOneByOne(backend, [
            try Self.change(ProjectionTests.event("s", .subscriptionStarted, at: Self.now - Self.day, expiresMs: Self.now + 29 * Self.day)),
            try Self.change(ProjectionTests.event("x", .subscriptionExpired, at: Self.now - 1_000)),
        ], users: Self.user1, keys: [Self.apple("otx-1")])
        #expect(result.changes == ["s com.example/production/u-1/pro.monthly otx-1 active active=true",
                                   "x com.example/production/u-1/pro.monthly otx-1 expired active=false"])
        #expect(result.entitlements["com.example/u-1"]?.map(\.state) == [.expired])
    }

    @Test("an id repeated in the batch and one seen before are duplicates; a late event is unchanged", arguments: Backend.allCases)
    func duplicates(backend: Backend) async throws {
        let started = try Self.change(ProjectionTests.event("d1", .subscriptionStarted, at: Self.now - 2 * Self.day, expiresMs: Self.now + 28 * Self.day))
        let seen = try Self.change(ProjectionTests.event("d0", .subscriptionRenewed, at: Self.now - 3 * Self.day, subject: "otx-2", user: "u-2"))
        let result = try await Self.batchedAndOneByOne(backend, setup: [seen], [
            started,
            try Self.change(ProjectionTests.event("d2", .subscriptionRenewed, at: Self.now - Self.day, expiresMs: Self.now + 29 * Self.day)),
            started,
            seen,
            try Self.change(ProjectionTests.event("d3", .subscriptionExpired, at: Self.now - 5 * Self.day)),
        ], users: Self.user1, keys: [Self.apple("otx-1"), Self.apple("otx-2")])
        #expect(result.outcomes == [.applied, .applied, .duplicate, .duplicate, .unchanged])
        #expect(result.changes.map { $0.split(separator: " ").first.map(String.init) } == ["d0", "d1", "d2"])
    }

    @Test("a Google upgrade in a batch with events of the old purchase, before and after it", arguments: Backend.allCases)
    func upgradeInBatch(backend: Backend) async throws {
        let source = "/google/com.example"
        func google(_ id: String, _ type: EventType, _ subject: String, at: Int64, _ state: PurchaseSnapshot) throws -> PurchaseChange {
            try Self.change(ProjectionTests.event(id, type, at: at, subject: subject, user: nil, source: source), state)
        }
        let basic = PurchaseSnapshot(kind: .subscription, state: .active, user: "u-1", product: "basic", expiresAtMs: Self.now + 20 * Self.day)
        let premium = PurchaseSnapshot(kind: .subscription, state: .active, user: nil, product: "premium",
                                       expiresAtMs: Self.now + 30 * Self.day, linkedPurchaseToken: "token-basic")
        let key = { (subject: String) in PurchaseKey(source: "google", app: "com.example", environment: "production", subject: subject) }
        let result = try await Self.batchedAndOneByOne(backend, [
            try google("g1", .subscriptionStarted, "token-basic", at: Self.now - 10 * Self.day, basic),
            try google("g2", .subscriptionRenewed, "token-basic", at: Self.now - 5 * Self.day, basic),
            try google("g3", .subscriptionStarted, "token-premium", at: Self.now - 1_000, premium),
            try google("g4", .subscriptionAutoRenewDisabled, "token-basic", at: Self.now - 500,
                       PurchaseSnapshot(kind: .subscription, state: .expired, user: nil, product: "basic", expiresAtMs: Self.now - 100)),
            try google("g5", .subscriptionRenewed, "token-premium", at: Self.now - 100, premium),
        ], users: Self.user1, keys: [key("token-basic"), key("token-premium")])
        #expect(result.outcomes == [.applied, .applied, .applied, .applied, .applied])
        #expect(result.purchases[key("token-premium")]?.user == "u-1")
        #expect(result.entitlements["com.example/u-1"]?.filter { $0.isActive(atMs: Self.now) }.map(\.product) == ["premium"])
        #expect(result.changes.contains("g3 com.example/production/u-1/basic token-basic superseded active=false"))
    }

    @Test("two entitlements of one user, and a purchase moving between them, in one batch", arguments: Backend.allCases)
    func twoEntitlements(backend: Backend) async throws {
        let result = try await Self.batchedAndOneByOne(backend, [
            Self.started("t1", Self.apple("otx-a"), user: "u-1", product: "gold"),
            Self.started("t2", Self.apple("otx-b"), user: "u-1", product: "silver"),
            Self.started("t3", Self.apple("otx-c"), user: "u-1", product: "gold", at: Self.now - 2 * Self.day),
            // otx-b becomes gold: silver ends, gold is unchanged or decided by otx-b.
            Self.started("t4", Self.apple("otx-b"), user: "u-1", product: "gold", at: Self.now - 1_000),
            try Self.change(ProjectionTests.event("t5", .subscriptionExpired, at: Self.now - 500, subject: "otx-a", product: "gold")),
        ], users: Self.user1, keys: ["otx-a", "otx-b", "otx-c"].map(Self.apple))
        #expect(result.entitlements["com.example/u-1"]?.map(\.product) == ["gold", "silver"])
        #expect(result.entitlements["com.example/u-1"]?.map(\.state) == [.active, .superseded])
        #expect(result.changes.contains { $0.hasPrefix("t4 com.example/production/u-1/silver ") && $0.hasSuffix("superseded active=false") })
    }

    @Test("keys and ids with quotes, backslashes, commas, braces, spaces, non-ASCII, empty or no user", arguments: Backend.allCases)
    func awkwardText(backend: Backend) async throws {
        let awkward = ["a\"b", "back\\slash", "com,ma", "{brace}", "sp ace", "NULL", "", "ünï-€-😀", "\\\"", "}{,\"\\ "]
        var changes: [PurchaseChange] = []
        var users: [(app: String, user: String)] = []
        var keys: [PurchaseKey] = []
        for (index, text) in awkward.enumerated() {
            let key = PurchaseKey(source: "apple", app: "app\(text)", environment: "production", subject: "sub\(text)")
            changes.append(Self.started("id\(text)", key, user: text, product: "prod\(text)"))
            users.append((app: key.app, user: text))
            keys.append(key)
            // The same text as a subject of its own with no user: stored, entitles nobody.
            let anonymous = PurchaseKey(source: "apple", app: "app\(text)", environment: "production", subject: text + "-\(index)")
            changes.append(Self.started("anon\(text)", anonymous, user: nil, product: text))
            keys.append(anonymous)
        }
        let result = try await Self.batchedAndOneByOne(backend, changes, users: users, keys: keys)
        #expect(result.outcomes == Array(repeating: .applied, count: changes.count))
        #expect(result.changes.count == awkward.count)
        for (index, text) in awkward.enumerated() {
            let key = keys[2 * index]
            #expect(result.purchases[key]?.user == text)
            #expect(result.purchases[key]?.key == key)
            #expect(result.purchases[keys[2 * index + 1]]?.user == nil)
            #expect(result.entitlements["app\(text)/\(text)"]?.map(\.product) == ["prod\(text)"])
        }
    }
}
