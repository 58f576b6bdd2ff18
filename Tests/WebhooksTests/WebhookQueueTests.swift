import Config
import Entitlements
import Events
import Store
import StoreTestSupport
import Testing
@testable import Webhooks

/// The deliveries' queue on both backends: only the head of a lane is claimed, a claim keeps it from
/// every other dispatcher until it lapses, a failure holds the lane's later messages back (and only
/// them), a delivery or a parking lets the lane go on, and replays and pruning keep ids and order.
@Suite("Webhook queue", .serialized)
struct WebhookQueueTests {
    static let endpoints = try! WebhookEndpoint.all(settings())

    static func settings() -> WebhookSettings {
        var settings = WebhookSettings()
        for name in ["backend", "audit"] {
            var endpoint = WebhookSettings.Endpoint(name: name, url: "https://\(name).example.com/")
            endpoint.secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
            if name == "audit" { endpoint.eventTypes = ["purchase.refunded"] }
            settings.endpoints.append(endpoint)
        }
        return settings
    }

    static func applied(user: String, step: Int, type: EventType = .subscriptionRenewed) -> AppliedEvent {
        let event = NormalizedEvent(id: "evt-\(user)-\(step)", type: type, source: "/iaptic/shop", environment: .production, app: "shop",
                                    subject: "\(user)-sub", occurredAt: "2026-11-27T00:00:0\(step).000Z", receivedAt: "2026-11-27T00:00:10.000Z",
                                    user: user, product: "premium", sourceType: "purchases.updated")
        let entitlement = Entitlement(app: "shop", environment: "production", user: user, product: "premium", source: "iaptic",
                                      subject: "\(user)-sub", state: .active, expiresAtMs: 4_000_000_000_000, gracePeriodExpiresAtMs: nil)
        return AppliedEvent(event: event, entitlement: entitlement, active: true)
    }

    static func record(_ applied: [AppliedEvent], on database: SQLDatabase, nowMs: Int64 = 1_000) async throws {
        let outbox = WebhookOutbox(endpoints: endpoints, wakeup: WebhookWakeup())
        _ = try await database.transaction { connection throws(StoreError) in
            _ = try outbox.record(applied, nowMs: nowMs, on: connection)
        }
    }

    /// Two users' first messages recorded and their deliveries claimed, by user.
    static func claimedHeads(_ users: [String], queue: WebhookStore, on database: SQLDatabase) async throws -> [String: ClaimedDelivery] {
        try await record(users.map { applied(user: $0, step: 0) }, on: database)
        let heads = try await queue.claim(endpoints: ["backend"], nowMs: 2_000, claimUntilMs: 50_000, limit: 10)
        return Dictionary(heads.map { ($0.message.user, $0) }, uniquingKeysWith: { first, _ in first })
    }

    static func attempt(_ claimed: ClaimedDelivery, outcome: AttemptRecord.Outcome, at: Int64, next: Int64?) -> AttemptRecord {
        AttemptRecord(endpoint: claimed.endpoint, sequence: claimed.sequence, lane: claimed.message.lane, token: claimed.token,
                      attempt: claimed.attempts + 1,
                      outcome: outcome, statusCode: outcome == .delivered ? 204 : 503, latencyMs: 3, excerpt: "", atMs: at, nextAttemptAtMs: next)
    }

    @Test("heads only, claimed once, a failure holds back only its lane, delivery and parking let it go on", arguments: Backend.allCases)
    func lanes(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let queue = WebhookStore(store: store)
            try await Self.record([Self.applied(user: "ann", step: 0), Self.applied(user: "bob", step: 0), Self.applied(user: "ann", step: 1),
                                   Self.applied(user: "ann", step: 2, type: .purchaseRefunded), Self.applied(user: "bob", step: 1)],
                                  on: store.database)
            // The audit endpoint takes refunds only: one message.
            let heads = try await queue.claim(endpoints: ["backend", "audit"], nowMs: 2_000, claimUntilMs: 50_000, limit: 10)
            #expect(Set(heads.map { "\($0.endpoint)/\($0.message.eventId)" }) == ["backend/evt-ann-0", "backend/evt-bob-0", "audit/evt-ann-2"])
            #expect(heads.allSatisfy { $0.message.messageId.hasPrefix("msg_") && $0.message.messageId.count == 36 })
            // Claimed: another dispatcher gets nothing until the claims lapse.
            #expect(try await queue.claim(endpoints: ["backend", "audit"], nowMs: 3_000, claimUntilMs: 50_000, limit: 10).isEmpty)
            let ann = try #require(heads.first { $0.endpoint == "backend" && $0.message.user == "ann" })
            let bob = try #require(heads.first { $0.endpoint == "backend" && $0.message.user == "bob" })
            // Ann's first fails until 20 s; Bob's is delivered: Bob's next is the only head.
            _ = try await queue.finish(Self.attempt(ann, outcome: .status, at: 4_000, next: 20_000), disableAfterMs: 1_000_000)
            _ = try await queue.finish(Self.attempt(bob, outcome: .delivered, at: 4_000, next: nil), disableAfterMs: 1_000_000)
            let next = try await queue.claim(endpoints: ["backend"], nowMs: 5_000, claimUntilMs: 50_000, limit: 10)
            #expect(next.map(\.message.eventId) == ["evt-bob-1"])
            // Ann's lane: at 20 s her first again (attempt 2), never her second before it.
            let again = try await queue.claim(endpoints: ["backend"], nowMs: 20_000, claimUntilMs: 60_000, limit: 10)
            #expect(again.map(\.message.eventId) == ["evt-ann-0"] && again.first?.attempts == 1)
            // Parked after its last attempt: the lane goes on at once.
            _ = try await queue.finish(Self.attempt(try #require(again.first), outcome: .timeout, at: 21_000, next: nil), disableAfterMs: 1_000_000)
            let after = try await queue.claim(endpoints: ["backend"], nowMs: 21_000, claimUntilMs: 70_000, limit: 10)
            #expect(after.map(\.message.eventId) == ["evt-ann-1"])
            let stats = try await queue.stats()
            #expect(stats["backend"]?.parked == 1 && stats["backend"]?.pending == 3)
            // A claim that lapses (a dispatcher killed mid-attempt) is claimed again.
            let lapsed = try await queue.claim(endpoints: ["backend"], nowMs: 80_000, claimUntilMs: 90_000, limit: 10)
            #expect(Set(lapsed.map(\.message.eventId)) == ["evt-ann-1", "evt-bob-1"])
        }
    }

    @Test("an attempt whose claim lapsed and was taken again does not move the delivery: only the new claim's holder does", arguments: Backend.allCases)
    func fencedByTheClaim(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let queue = WebhookStore(store: store)
            try await Self.record([Self.applied(user: "gus", step: 0), Self.applied(user: "gus", step: 1)], on: store.database)
            let slow = try #require(try await queue.claim(endpoints: ["backend"], nowMs: 2_000, claimUntilMs: 10_000, limit: 10).first)
            // Its claim lapses; another dispatcher takes the message and delivers it.
            let other = try #require(try await queue.claim(endpoints: ["backend"], nowMs: 11_000, claimUntilMs: 40_000, limit: 10).first)
            #expect(other.sequence == slow.sequence && other.token != slow.token)
            _ = try await queue.finish(Self.attempt(other, outcome: .delivered, at: 12_000, next: nil), disableAfterMs: 1_000_000)
            let next = try #require(try await queue.claim(endpoints: ["backend"], nowMs: 12_000, claimUntilMs: 40_000, limit: 10).first)
            #expect(next.message.eventId == "evt-gus-1")
            // The slow attempt ends late, failed: the delivered message stays delivered, the lane stays on its second.
            _ = try await queue.finish(Self.attempt(slow, outcome: .timeout, at: 13_000, next: 14_000), disableAfterMs: 1_000_000)
            let rows = try await store.database.read { connection throws(StoreError) in
                try connection.query("SELECT message_sequence, status FROM webhook_deliveries WHERE endpoint = 'backend' ORDER BY message_sequence")
            }
            #expect(rows.map { $0.text("status") } == ["delivered", "pending"])
            #expect(try await queue.attempts(endpoint: "backend", sinceMs: 0, limit: 10).count == 2, "both attempts are in the history")
        }
    }

    @Test("a message recorded behind one waiting for its retry is due with it, not before: polls do not look at it meanwhile", arguments: Backend.allCases)
    func recordedBehindARetry(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let queue = WebhookStore(store: store)
            try await Self.record([Self.applied(user: "hal", step: 0)], on: store.database)
            let head = try #require(try await queue.claim(endpoints: ["backend"], nowMs: 2_000, claimUntilMs: 10_000, limit: 10).first)
            _ = try await queue.finish(Self.attempt(head, outcome: .status, at: 3_000, next: 30_000), disableAfterMs: 1_000_000)
            try await Self.record([Self.applied(user: "hal", step: 1), Self.applied(user: "ida", step: 0)], on: store.database, nowMs: 4_000)
            let due = try await store.database.read { connection throws(StoreError) in
                try connection.query("""
                    SELECT m.user_id, m.event_id, d.next_attempt_at_ms FROM webhook_deliveries d JOIN webhook_messages m ON m.sequence = d.message_sequence
                    WHERE d.endpoint = 'backend' ORDER BY d.message_sequence
                    """).map { "\($0.text("event_id") ?? "")@\($0.int("next_attempt_at_ms") ?? -1)" }
            }
            #expect(due == ["evt-hal-0@30000", "evt-hal-1@30000", "evt-ida-0@4000"])
        }
    }

    @Test("two dispatchers claiming at once never take the same delivery", arguments: Backend.allCases)
    func concurrentClaims(backend: Backend) async throws {
        try await TestDatabases.withURL(backend) { url in
            let first = try await EntitlementStore.open(url: url, logger: TestDatabases.logger)
            let second = try await EntitlementStore.open(url: url, logger: TestDatabases.logger)
            defer { Task { await first.close(); await second.close() } }
            try await Self.record((0..<40).map { Self.applied(user: "user-\($0)", step: 0) }, on: first.database)
            async let a = WebhookStore(store: first).claim(endpoints: ["backend"], nowMs: 2_000, claimUntilMs: 50_000, limit: 40)
            async let b = WebhookStore(store: second).claim(endpoints: ["backend"], nowMs: 2_000, claimUntilMs: 50_000, limit: 40)
            let (one, two) = try await (a, b)
            let taken = one.map(\.sequence) + two.map(\.sequence)
            #expect(Set(taken).count == taken.count, "a delivery claimed twice")
            #expect(taken.count == 40)
        }
    }

    @Test("a replay queues a delivered message again with its id; an enabled endpoint's waiting messages are due at once; pruning keeps what waits", arguments: Backend.allCases)
    func replayEnableAndPrune(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let queue = WebhookStore(store: store)
            let heads = try await Self.claimedHeads(["cat", "dan"], queue: queue, on: store.database)
            let cat = try #require(heads["cat"])
            let dan = try #require(heads["dan"])
            _ = try await queue.finish(Self.attempt(cat, outcome: .delivered, at: 3_000, next: nil), disableAfterMs: 1_000_000)
            _ = try await queue.finish(Self.attempt(dan, outcome: .status, at: 3_000, next: 9_000_000), disableAfterMs: 1_000_000)
            #expect(try await queue.replay(endpoint: "backend", sequences: [cat.sequence], nowMs: 4_000) == 1)
            try await queue.setDisabled("backend", false, reason: "operator", nowMs: 4_000)
            let due = try await queue.claim(endpoints: ["backend"], nowMs: 4_000, claimUntilMs: 50_000, limit: 10)
            #expect(Set(due.map(\.message.messageId)) == [cat.message.messageId, dan.message.messageId])
            #expect(due.first { $0.message.user == "cat" }?.attempts == 0)
            for claimed in due {
                _ = try await queue.finish(Self.attempt(claimed, outcome: claimed.message.user == "cat" ? .delivered : .status, at: 5_000,
                                                        next: claimed.message.user == "cat" ? nil : 9_000_000), disableAfterMs: 1_000_000)
            }
            // Cat's delivered message goes, with its attempts; Dan's waiting one stays.
            #expect(try await queue.prune(beforeMs: 6_000) == 1)
            let kept = try await queue.messages(sinceMs: 0, limit: 10)
            #expect(kept.map(\.user) == ["dan"])
            #expect(try await queue.attempts(endpoint: "backend", sinceMs: 0, limit: 10).allSatisfy { $0.messageId == dan.message.messageId })
        }
    }

    @Test("an endpoint failing for longer than the limit is disabled once, and a success starts the count again", arguments: Backend.allCases)
    func disabledForFailing(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            let queue = WebhookStore(store: store)
            let heads = try await Self.claimedHeads(["eve", "fay"], queue: queue, on: store.database)
            let eve = try #require(heads["eve"])
            let fay = try #require(heads["fay"])
            #expect(try await queue.finish(Self.attempt(eve, outcome: .timeout, at: 10_000, next: 11_000), disableAfterMs: 5_000) == false)
            #expect(try await queue.finish(Self.attempt(fay, outcome: .delivered, at: 12_000, next: nil), disableAfterMs: 5_000) == false)
            let retry = try #require(try await queue.claim(endpoints: ["backend"], nowMs: 13_000, claimUntilMs: 50_000, limit: 10).first)
            #expect(try await queue.finish(Self.attempt(retry, outcome: .timeout, at: 14_000, next: 15_000), disableAfterMs: 5_000) == false,
                    "the success at 12 s started the count again")
            let third = try #require(try await queue.claim(endpoints: ["backend"], nowMs: 15_000, claimUntilMs: 50_000, limit: 10).first)
            #expect(try await queue.finish(Self.attempt(third, outcome: .timeout, at: 19_000, next: 20_000), disableAfterMs: 5_000) == true)
            #expect(try await queue.states()["backend"] == WebhookStore.EndpointState(disabled: true, disabledReason: "failing", failingSinceMs: 14_000))
        }
    }

    @Test("forwarded deliveries: each endpoint's filters and start decide, a body recorded twice is one message, the request comes back byte for byte",
          arguments: Backend.allCases)
    func forwarded(backend: Backend) async throws {
        try await TestDatabases.withStore(backend) { store in
            var settings = WebhookSettings()
            for (name, senders) in [("vendor", ["apple"]), ("staging", [])] {
                var endpoint = WebhookSettings.Endpoint(name: name, url: "https://\(name).example.com/")
                endpoint.kind = .forward
                endpoint.secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
                endpoint.senders = Set(senders)
                settings.endpoints.append(endpoint)
            }
            let forwarding = try #require(WebhookForwarding(endpoints: try WebhookEndpoint.all(settings), retentionDays: 7, store: store,
                                                                 wakeup: WebhookWakeup()))
            let since = try await forwarding.start(nowMs: 5_000)
            #expect(since == ["vendor": 5_000, "staging": 5_000])
            // Started again later: each endpoint keeps its first start.
            #expect(try await forwarding.start(nowMs: 9_000) == since)
            func delivery(_ sender: String, body: String, receivedAt: String = "2026-11-27T00:00:10.000Z") -> ForwardedDelivery {
                ForwardedDelivery(sender: SourceName(sender), key: Array("purchase-1".utf8), body: Array(body.utf8), recordHeaders: [
                    ("http_content-type", "application/json"), ("http_x-forwarded-for", "10.0.0.1"), ("tollgate_app", "com.example"),
                    ("tollgate_environment", "sandbox"), ("ce_type", "dev.tollgate.subscription.renewed"), ("ce_id", "apple:n1"),
                    ("tollgate_received_at", receivedAt),
                ], timestampMs: nil)
            }
            let now = try #require(Timestamp(rfc3339: "2026-11-27T00:01:00.000Z")).millisecondsSince1970
            let recorded = try await forwarding.record([
                delivery("apple", body: #"{"signedPayload":"a"}"#), delivery("apple", body: #"{"signedPayload":"a"}"#),
                delivery("google", body: #"{"message":{}}"#), delivery("apple", body: #"{"signedPayload":"b"}"#),
                // Before the endpoints started (1970): not theirs.
                delivery("apple", body: #"{"signedPayload":"old"}"#, receivedAt: "1970-01-01T00:00:01.000Z"),
                // Older than webhooks.retentionDays (a group that lost its offsets reads it again): its message
                // may have been pruned, so it is not recorded twice.
                delivery("apple", body: #"{"signedPayload":"pruned"}"#, receivedAt: "2026-11-19T00:00:00.000Z"),
            ], since: since, nowMs: now)
            #expect(recorded == 3)
            #expect(try await forwarding.record([delivery("apple", body: #"{"signedPayload":"a"}"#)], since: since, nowMs: now) == 0)
            let claimed = try await WebhookStore(store: store).claim(endpoints: ["vendor", "staging"], nowMs: now, claimUntilMs: now + 1_000, limit: 10)
            // A lane per sender and key: Apple's second waits behind its first at both endpoints; Google's goes beside them.
            #expect(claimed.map { "\($0.endpoint)/\($0.message.source)" }.sorted() == ["staging/apple", "staging/google", "vendor/apple"])
            let vendor = try #require(claimed.first { $0.endpoint == "vendor" })
            #expect(claimed.filter { $0.message.source == "apple" }.allSatisfy { String(decoding: $0.message.forwarded?.body ?? [], as: UTF8.self).hasSuffix(#""a"}"#) })
            #expect(vendor.message.kind == .forward && vendor.message.source == "apple" && vendor.message.eventType == "subscription.renewed")
            #expect(vendor.message.forwarded == ForwardedRequest(body: Array(#"{"signedPayload":"a"}"#.utf8),
                                                                 headers: [.init(name: "content-type", value: "application/json")]))
            #expect(try WebhookEndpoint.all(settings).contains { $0.name == "vendor" && $0.takes(vendor.message) })
            #expect(!Self.endpoints.contains { $0.takes(vendor.message) }, "events endpoints never replay a forwarded request")
        }
    }
}
