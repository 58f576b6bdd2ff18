import Config
import Store

/// One message waiting for one endpoint, claimed by a dispatcher: the head of its lane.
struct ClaimedDelivery: Sendable {
    var endpoint: String
    var sequence: Int64
    /// Attempts made before this one.
    var attempts: Int
    var message: WebhookMessage
    /// Names this claim: only its holder moves the delivery on.
    var token: String
}

/// A message as the projection recorded it (`webhook_messages`).
public struct WebhookMessage: Sendable {
    public var sequence: Int64
    public var messageId: String
    var lane: String
    public var app, environment, user, product: String
    public var eventId, eventType: String
    var eventJSON: String
    var source, subject, state: String
    var active: Bool
    var expiresAtMs, graceExpiresAtMs: Int64?
    var transferredFrom, transferredTo: String?
    var quantity: Int?
    public var createdAtMs: Int64
    /// `events`, or `forward`: a sender's request as it arrived, `forwarded` (its `source` the sender).
    public var kind: WebhookSettings.Endpoint.Kind = .events
    var forwarded: ForwardedRequest?

    /// What a claim reads: everything, a forwarded request's bytes included.
    static let columns = listedColumns + ", m.body, m.forward_headers"
    /// What a listing reads: the message without a forwarded request's bytes.
    static let listedColumns = """
        m.sequence, m.message_id, m.lane, m.app, m.environment, m.user_id, m.product, m.event_id, m.event_type, m.event_json,
        m.source, m.subject, m.state, m.active, m.expires_at_ms, m.grace_expires_at_ms, m.transferred_from, m.transferred_to, m.created_at_ms,
        m.kind, m.quantity
        """

    static func decode(_ row: SQLRow) -> WebhookMessage? {
        guard let sequence = row.int("sequence"), let messageId = row.text("message_id"), let lane = row.text("lane"),
              let app = row.text("app"), let environment = row.text("environment"), let user = row.text("user_id"),
              let product = row.text("product"), let eventId = row.text("event_id"), let eventType = row.text("event_type"),
              let eventJSON = row.text("event_json"), let source = row.text("source"), let subject = row.text("subject"),
              let state = row.text("state"), let active = row.bool("active"), let createdAtMs = row.int("created_at_ms") else { return nil }
        var message = WebhookMessage(sequence: sequence, messageId: messageId, lane: lane, app: app, environment: environment, user: user,
                                     product: product, eventId: eventId, eventType: eventType, eventJSON: eventJSON, source: source,
                                     subject: subject, state: state, active: active, expiresAtMs: row.int("expires_at_ms"),
                                     graceExpiresAtMs: row.int("grace_expires_at_ms"), transferredFrom: row.text("transferred_from"),
                                     transferredTo: row.text("transferred_to"), quantity: row.int("quantity").map { Int($0) },
                                     createdAtMs: createdAtMs)
        if row.text("kind") == WebhookSettings.Endpoint.Kind.forward.rawValue {
            // Written by `WebhookForwarding` alone; nothing here may keep a lane's head from being claimed.
            message.kind = .forward
            message.forwarded = ForwardedRequest(body: row.blob("body") ?? [],
                                                 headers: ForwardedRequest.headers(json: row.text("forward_headers") ?? "") ?? [])
        }
        return message
    }
}

/// What one attempt came to, as the dispatcher records it.
struct AttemptRecord: Sendable {
    enum Outcome: String, Sendable, CaseIterable {
        /// A 2xx.
        case delivered
        /// Another status (a 3xx is one: redirects are not followed).
        case status = "http_status"
        case timeout
        /// Refused, reset, a name that does not resolve, TLS that does not verify.
        case connection
        /// The endpoint's name resolves to an address it may not reach (private, loopback, reserved).
        case addressRefused = "address_refused"
    }

    var endpoint: String
    var sequence: Int64
    var lane: String
    /// The claim the attempt was made under.
    var token: String
    /// 1 for the first attempt.
    var attempt: Int
    var outcome: Outcome
    var statusCode: Int?
    var latencyMs: Int64
    var excerpt: String
    var atMs: Int64
    /// When to try again; nil when this attempt ends the message (delivered, or the last attempt: parked).
    var nextAttemptAtMs: Int64?
}

/// The deliveries' tables (migration 14): a pending delivery per endpoint and message, claimed by one
/// dispatcher at a time and only at the head of its lane (the oldest pending message of its entitlement
/// for that endpoint), so each lane is delivered in order across replicas while lanes go in parallel.
enum WebhookQueue {
    static func enqueue(endpoint: String, sequence: Int64, lane: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        // Not due before what waits ahead of it in its lane: polls do not look at it until then.
        let ahead = try connection.query("""
            SELECT MAX(next_attempt_at_ms) AS due FROM webhook_deliveries WHERE endpoint = $1 AND lane = $2 AND status = 'pending'
            """, [.text(endpoint), .text(lane)]).first?.int("due")
        try connection.execute("""
            INSERT INTO webhook_deliveries (endpoint, message_sequence, lane, status, attempts, next_attempt_at_ms, claimed_until_ms,
                                            created_at_ms, updated_at_ms)
            VALUES ($1, $2, $3, 'pending', 0, $4, 0, $5, $5) ON CONFLICT (endpoint, message_sequence) DO NOTHING
            """, [.text(endpoint), .int(sequence), .text(lane), .int(max(nowMs, ahead ?? nowMs)), .int(nowMs)])
    }

    /// Up to `limit` due lane heads of these endpoints, claimed until `claimUntilMs` (past the attempt's
    /// timeout: a dispatcher that dies mid-attempt leaves a claim that lapses, and the message is sent again).
    static func claim(endpoints: [String], nowMs: Int64, claimUntilMs: Int64, limit: Int, token: String,
                      on connection: any SQLConnection) throws(StoreError) -> [ClaimedDelivery] {
        guard !endpoints.isEmpty, limit > 0 else { return [] }
        let names = endpoints.indices.map { "$\($0 + 3)" }.joined(separator: ", ")
        let rows = try connection.query("""
            SELECT d.endpoint, d.attempts, \(WebhookMessage.columns)
            FROM webhook_deliveries d JOIN webhook_messages m ON m.sequence = d.message_sequence
            WHERE d.status = 'pending' AND d.next_attempt_at_ms <= $1 AND d.claimed_until_ms <= $1 AND d.endpoint IN (\(names))
              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint = d.endpoint AND e.lane = d.lane
                              AND e.status = 'pending' AND e.message_sequence < d.message_sequence)
            ORDER BY d.next_attempt_at_ms, d.message_sequence LIMIT $2
            """, [.int(nowMs), .int(Int64(limit))] + endpoints.map { .text($0) })
        var claimed: [ClaimedDelivery] = []
        for row in rows {
            guard let endpoint = row.text("endpoint"), let attempts = row.int("attempts"), let message = WebhookMessage.decode(row) else { continue }
            // Another dispatcher may have claimed it, or tried it and set it due later, since the read: the
            // update's own check (as the row stands now) decides.
            let taken = try connection.execute("""
                UPDATE webhook_deliveries SET claimed_until_ms = $1, claim_token = $5
                WHERE endpoint = $2 AND message_sequence = $3 AND status = 'pending' AND claimed_until_ms <= $4
                  AND next_attempt_at_ms <= $4 AND attempts = $6
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint = $2 AND e.lane = webhook_deliveries.lane
                                  AND e.status = 'pending' AND e.message_sequence < $3)
                """, [.int(claimUntilMs), .text(endpoint), .int(message.sequence), .int(nowMs), .text(token), .int(attempts)])
            if taken == 1 {
                claimed.append(ClaimedDelivery(endpoint: endpoint, sequence: message.sequence, attempts: Int(attempts), message: message, token: token))
            }
        }
        return claimed
    }

    /// Records the attempt and moves the delivery on: delivered, parked, or due again (its lane's later
    /// messages held until then, so polls do not look at them). Returns true when this failure passed
    /// `disableAfterMs` of failing and disabled the endpoint.
    static func finish(_ record: AttemptRecord, disableAfterMs: Int64, on connection: any SQLConnection) throws(StoreError) -> Bool {
        try connection.execute("""
            INSERT INTO webhook_attempts (endpoint, message_sequence, attempt, attempted_at_ms, outcome, status_code, latency_ms, excerpt)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """, [.text(record.endpoint), .int(record.sequence), .int(Int64(record.attempt)), .int(record.atMs), .text(record.outcome.rawValue),
                  SQLValue(record.statusCode), .int(record.latencyMs), .text(record.excerpt)])
        let delivered = record.outcome == .delivered
        let status = delivered ? "delivered" : (record.nextAttemptAtMs == nil ? "parked" : "pending")
        // Only under the claim it was made with: a claim that lapsed meanwhile belongs to another attempt,
        // which moves the delivery on (this one stays in the history above).
        let moved = try connection.execute("""
            UPDATE webhook_deliveries SET status = $1, attempts = $2, next_attempt_at_ms = $3, claimed_until_ms = 0, claim_token = NULL,
                                          updated_at_ms = $4
            WHERE endpoint = $5 AND message_sequence = $6 AND claim_token = $7 AND status = 'pending'
            """, [.text(status), .int(Int64(record.attempt)), .int(record.nextAttemptAtMs ?? record.atMs), .int(record.atMs),
                  .text(record.endpoint), .int(record.sequence), .text(record.token)])
        guard moved == 1 else { return false }
        if let next = record.nextAttemptAtMs {
            try connection.execute("""
                UPDATE webhook_deliveries SET next_attempt_at_ms = $1
                WHERE endpoint = $2 AND lane = $3 AND status = 'pending' AND message_sequence > $4 AND next_attempt_at_ms < $1
                """, [.int(next), .text(record.endpoint), .text(record.lane), .int(record.sequence)])
        } else {
            // The lane goes on: what waited behind this message is due now.
            try connection.execute("""
                UPDATE webhook_deliveries SET next_attempt_at_ms = $1
                WHERE endpoint = $2 AND lane = $3 AND status = 'pending' AND message_sequence > $4 AND attempts = 0 AND next_attempt_at_ms > $1
                """, [.int(record.atMs), .text(record.endpoint), .text(record.lane), .int(record.sequence)])
        }
        try connection.execute("""
            INSERT INTO webhook_endpoints (endpoint, disabled, failing_since_ms, updated_at_ms) VALUES ($1, 0, NULL, $2)
            ON CONFLICT (endpoint) DO NOTHING
            """, [.text(record.endpoint), .int(record.atMs)])
        if delivered {
            try connection.execute("UPDATE webhook_endpoints SET failing_since_ms = NULL WHERE endpoint = $1 AND failing_since_ms IS NOT NULL",
                                   [.text(record.endpoint)])
            return false
        }
        try connection.execute("UPDATE webhook_endpoints SET failing_since_ms = $1 WHERE endpoint = $2 AND failing_since_ms IS NULL",
                               [.int(record.atMs), .text(record.endpoint)])
        let disabled = try connection.execute("""
            UPDATE webhook_endpoints SET disabled = 1, disabled_reason = 'failing', updated_at_ms = $1
            WHERE endpoint = $2 AND disabled = 0 AND failing_since_ms <= $3
            """, [.int(record.atMs), .text(record.endpoint), .int(record.atMs - disableAfterMs)])
        return disabled == 1
    }
}
