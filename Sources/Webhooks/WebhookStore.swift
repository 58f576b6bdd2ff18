import Entitlements
import Foundation
import Store

/// The webhooks' tables in the entitlement store, for the dispatcher and the operator's commands.
public struct WebhookStore: Sendable {
    let database: SQLDatabase

    public init(store: EntitlementStore) { database = store.database }

    func claim(endpoints: [String], nowMs: Int64, claimUntilMs: Int64, limit: Int,
               token: String = UUID().uuidString) async throws(StoreError) -> [ClaimedDelivery] {
        guard !endpoints.isEmpty else { return [] }
        // Most polls find nothing: they look on the read lane first, so they do not take the writer.
        let names = endpoints
        let placeholders = names.indices.map { "$\($0 + 2)" }.joined(separator: ", ")
        let anyDue = try await database.read { connection throws(StoreError) in
            try !connection.query("""
                SELECT 1 AS due FROM webhook_deliveries
                WHERE status = 'pending' AND next_attempt_at_ms <= $1 AND claimed_until_ms <= $1 AND endpoint IN (\(placeholders)) LIMIT 1
                """, [.int(nowMs)] + names.map { .text($0) }).isEmpty
        }
        guard anyDue else { return [] }
        return try await database.transaction { connection throws(StoreError) in
            try WebhookQueue.claim(endpoints: names, nowMs: nowMs, claimUntilMs: claimUntilMs, limit: limit, token: token, on: connection)
        }
    }

    func finish(_ record: AttemptRecord, disableAfterMs: Int64) async throws(StoreError) -> Bool {
        try await finish([record], disableAfterMs: disableAfterMs).first ?? false
    }

    /// Several attempts in one transaction (`AttemptCommits`): whether each disabled its endpoint.
    func finish(_ records: [AttemptRecord], disableAfterMs: Int64) async throws(StoreError) -> [Bool] {
        try await database.transaction { connection throws(StoreError) in
            var disabled: [Bool] = []
            for record in records { disabled.append(try WebhookQueue.finish(record, disableAfterMs: disableAfterMs, on: connection)) }
            return disabled
        }
    }

    public struct EndpointState: Sendable, Equatable {
        public var disabled: Bool
        /// `failing` (disabled by the dispatcher) or `operator`.
        public var disabledReason: String?
        public var failingSinceMs: Int64?
    }

    /// Each endpoint's stored state; an endpoint without a row has never failed nor been disabled.
    public func states() async throws(StoreError) -> [String: EndpointState] {
        try await database.read { connection throws(StoreError) in
            var states: [String: EndpointState] = [:]
            for row in try connection.query("SELECT endpoint, disabled, disabled_reason, failing_since_ms FROM webhook_endpoints") {
                guard let name = row.text("endpoint") else { continue }
                states[name] = EndpointState(disabled: row.bool("disabled") ?? false, disabledReason: row.text("disabled_reason"),
                                             failingSinceMs: row.int("failing_since_ms"))
            }
            return states
        }
    }

    /// Disables an endpoint (`reason`), or enables it: its failing time starts again, and what waited for
    /// it is due now, from where it stopped (each lane's oldest pending message first).
    public func setDisabled(_ endpoint: String, _ disabled: Bool, reason: String, nowMs: Int64) async throws(StoreError) {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                INSERT INTO webhook_endpoints (endpoint, disabled, disabled_reason, failing_since_ms, updated_at_ms) VALUES ($1, $2, $3, NULL, $4)
                ON CONFLICT (endpoint) DO UPDATE SET disabled = excluded.disabled, disabled_reason = excluded.disabled_reason,
                    failing_since_ms = NULL, updated_at_ms = excluded.updated_at_ms
                """, [.text(endpoint), .bool(disabled), disabled ? .text(reason) : .null, .int(nowMs)])
            if !disabled {
                try connection.execute("""
                    UPDATE webhook_deliveries SET next_attempt_at_ms = $1 WHERE endpoint = $2 AND status = 'pending' AND next_attempt_at_ms > $1
                    """, [.int(nowMs), .text(endpoint)])
            }
        }
    }

    public struct EndpointStats: Sendable, Equatable {
        public var pending = 0
        public var parked = 0
        public var oldestPendingCreatedAtMs: Int64?
        public init() {}
    }

    public func stats() async throws(StoreError) -> [String: EndpointStats] {
        try await database.read { connection throws(StoreError) in
            var stats: [String: EndpointStats] = [:]
            for row in try connection.query("""
                SELECT endpoint, status, COUNT(*) AS n, MIN(created_at_ms) AS oldest FROM webhook_deliveries
                WHERE status IN ('pending', 'parked') GROUP BY endpoint, status
                """) {
                guard let name = row.text("endpoint"), let status = row.text("status"), let count = row.int("n") else { continue }
                if status == "pending" {
                    stats[name, default: EndpointStats()].pending = Int(count)
                    stats[name, default: EndpointStats()].oldestPendingCreatedAtMs = row.int("oldest")
                } else {
                    stats[name, default: EndpointStats()].parked = Int(count)
                }
            }
            return stats
        }
    }

    /// One recorded attempt.
    public struct Attempt: Sendable {
        public var messageId: String
        public var eventId: String
        public var eventType: String
        public var attempt: Int
        public var attemptedAtMs: Int64
        public var outcome: String
        public var statusCode: Int?
        public var latencyMs: Int64
        public var excerpt: String
    }

    /// An endpoint's attempts since `sinceMs`, newest first, at most `limit`; `messageIds` narrows them.
    public func attempts(endpoint: String, sinceMs: Int64, messageIds: Set<String>? = nil, limit: Int) async throws(StoreError) -> [Attempt] {
        let narrowed = messageIds.map { Array($0).sorted() }
        if let narrowed, narrowed.isEmpty { return [] }
        let filter = narrowed.map { ids in " AND m.message_id IN (" + ids.indices.map { "$\($0 + 4)" }.joined(separator: ", ") + ")" } ?? ""
        return try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT m.message_id, m.event_id, m.event_type, a.attempt, a.attempted_at_ms, a.outcome, a.status_code, a.latency_ms, a.excerpt
                FROM webhook_attempts a JOIN webhook_messages m ON m.sequence = a.message_sequence
                WHERE a.endpoint = $1 AND a.attempted_at_ms >= $2\(filter) ORDER BY a.attempted_at_ms DESC, a.id DESC LIMIT $3
                """, [.text(endpoint), .int(sinceMs), .int(Int64(limit))] + (narrowed ?? []).map { .text($0) }).compactMap { row -> Attempt? in
                guard let messageId = row.text("message_id"),
                      let eventId = row.text("event_id"), let type = row.text("event_type"), let attempt = row.int("attempt"),
                      let at = row.int("attempted_at_ms"), let outcome = row.text("outcome"), let latency = row.int("latency_ms"),
                      let excerpt = row.text("excerpt") else { return nil }
                return Attempt(messageId: messageId, eventId: eventId, eventType: type, attempt: Int(attempt), attemptedAtMs: at,
                               outcome: outcome, statusCode: row.int("status_code").map(Int.init), latencyMs: latency, excerpt: excerpt)
            }
        }
    }

    /// The messages kept since `sinceMs` (oldest first), at most `limit`: what a replay chooses from,
    /// without a forwarded request's body and headers (a replay needs the message, not its bytes).
    public func messages(sinceMs: Int64, limit: Int) async throws(StoreError) -> [WebhookMessage] {
        try await database.read { connection throws(StoreError) in
            try connection.query("SELECT \(WebhookMessage.listedColumns) FROM webhook_messages m WHERE m.created_at_ms >= $1 ORDER BY m.sequence LIMIT $2",
                                 [.int(sinceMs), .int(Int64(limit))]).compactMap(WebhookMessage.decode)
        }
    }

    /// The kept messages since `sinceMs` that `endpoint`'s filters take, narrowed to one purchase id or message id
    /// (`tollgate webhooks replay`, the console's "send again").
    public func messages(for endpoint: WebhookEndpoint, sinceMs: Int64, purchaseId: String?, messageId: String?,
                         ids: PurchaseIds) async throws(StoreError) -> [WebhookMessage] {
        try await messages(sinceMs: sinceMs, limit: 1_000_000).filter { message in
            endpoint.takes(message)
                && (messageId == nil || message.messageId == messageId)
                && (purchaseId == nil || message.purchaseId(ids: ids) == purchaseId)
        }
    }

    /// The messages these events made (at most 200 events), oldest first.
    public func messages(ofEvents eventIds: [String]) async throws(StoreError) -> [WebhookMessage] {
        let ids = Array(eventIds.prefix(200))
        guard !ids.isEmpty else { return [] }
        return try await database.read { connection throws(StoreError) in
            let placeholders = ids.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
            return try connection.query("SELECT \(WebhookMessage.listedColumns) FROM webhook_messages m WHERE m.event_id IN (\(placeholders)) ORDER BY m.sequence",
                                        ids.map { .text($0) }).compactMap(WebhookMessage.decode)
        }
    }

    /// One endpoint's delivery of a message, as the console's purchase story shows it.
    public struct EventDelivery: Sendable, Equatable {
        public var eventId: String
        public var messageId: String
        public var endpoint: String
        public var user: String
        public var product: String
        /// `pending`, `delivered`, `parked`.
        public var status: String
        public var attempts: Int
        public var updatedAtMs: Int64
    }

    /// Every endpoint's delivery of the messages these events made (at most 200 events), oldest message first.
    public func deliveries(ofEvents eventIds: [String]) async throws(StoreError) -> [EventDelivery] {
        let ids = Array(eventIds.prefix(200))
        guard !ids.isEmpty else { return [] }
        return try await database.read { connection throws(StoreError) in
            let placeholders = ids.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
            return try connection.query("""
                SELECT m.event_id, m.message_id, m.user_id, m.product, d.endpoint, d.status, d.attempts, d.updated_at_ms
                FROM webhook_messages m JOIN webhook_deliveries d ON d.message_sequence = m.sequence
                WHERE m.event_id IN (\(placeholders)) ORDER BY m.sequence, d.endpoint
                """, ids.map { .text($0) }).compactMap { row in
                guard let event = row.text("event_id"), let message = row.text("message_id"), let user = row.text("user_id"),
                      let product = row.text("product"), let endpoint = row.text("endpoint"), let status = row.text("status"),
                      let attempts = row.int("attempts"), let updated = row.int("updated_at_ms") else { return nil }
                return EventDelivery(eventId: event, messageId: message, endpoint: endpoint, user: user, product: product, status: status,
                                     attempts: Int(attempts), updatedAtMs: updated)
            }
        }
    }

    /// Delivers these messages to the endpoint again (a new delivery where it had none), each from its
    /// first attempt, with the same message id; returns how many were queued. A message whose lane has an
    /// attempt in flight is left out (it would run beside it): run the replay again once it is answered.
    /// The messages an endpoint parked (every attempt failed), oldest first, at most `limit`: what the console
    /// sends again when asked to.
    public func parkedSequences(endpoint: String, limit: Int) async throws(StoreError) -> [Int64] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT message_sequence FROM webhook_deliveries WHERE endpoint = $1 AND status = 'parked' ORDER BY message_sequence LIMIT $2
                """, [.text(endpoint), .int(Int64(limit))]).compactMap { $0.int("message_sequence") }
        }
    }

    public func replay(endpoint: String, sequences: [Int64], nowMs: Int64) async throws(StoreError) -> Int {
        try await database.transaction { connection throws(StoreError) in
            var queued = 0
            for sequence in sequences {
                let lanes = try connection.query("SELECT lane FROM webhook_messages WHERE sequence = $1", [.int(sequence)])
                guard let lane = lanes.first?.text("lane") else { continue }
                let inFlight = try connection.query("""
                    SELECT 1 AS busy FROM webhook_deliveries WHERE endpoint = $1 AND lane = $2 AND status = 'pending' AND claimed_until_ms > $3 LIMIT 1
                    """, [.text(endpoint), .text(lane), .int(nowMs)])
                guard inFlight.isEmpty else { continue }
                try connection.execute("""
                    INSERT INTO webhook_deliveries (endpoint, message_sequence, lane, status, attempts, next_attempt_at_ms, claimed_until_ms,
                                                    created_at_ms, updated_at_ms)
                    VALUES ($1, $2, $3, 'pending', 0, $4, 0, $4, $4)
                    ON CONFLICT (endpoint, message_sequence) DO UPDATE SET status = 'pending', attempts = 0, claimed_until_ms = 0,
                        claim_token = NULL, next_attempt_at_ms = excluded.next_attempt_at_ms, updated_at_ms = excluded.updated_at_ms
                    """, [.text(endpoint), .int(sequence), .text(lane), .int(nowMs)])
                queued += 1
            }
            return queued
        }
    }

    /// Deletes what was delivered or parked before `beforeMs`, with its attempts, and the messages no
    /// delivery needs any more. Returns how many deliveries it deleted.
    static let pruneBatch = 2_000

    public func prune(beforeMs: Int64) async throws(StoreError) -> Int {
        let limit = Self.pruneBatch
        return try await database.transaction { connection throws(StoreError) in
            var done: [SQLRow] = []
            for status in ["delivered", "parked"] where done.count < limit {
                done += try connection.query("""
                    SELECT endpoint, message_sequence FROM webhook_deliveries WHERE status = $1 AND updated_at_ms < $2 LIMIT $3
                    """, [.text(status), .int(beforeMs), .int(Int64(limit - done.count))])
            }
            for row in done {
                guard let endpoint = row.text("endpoint"), let sequence = row.int("message_sequence") else { continue }
                try connection.execute("DELETE FROM webhook_attempts WHERE endpoint = $1 AND message_sequence = $2", [.text(endpoint), .int(sequence)])
                try connection.execute("DELETE FROM webhook_deliveries WHERE endpoint = $1 AND message_sequence = $2", [.text(endpoint), .int(sequence)])
            }
            try connection.execute("""
                DELETE FROM webhook_messages WHERE sequence IN (
                    SELECT m.sequence FROM webhook_messages m WHERE m.created_at_ms < $1
                      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_sequence = m.sequence) LIMIT $2)
                """, [.int(beforeMs), .int(Int64(limit))])
            return done.count
        }
    }
}
