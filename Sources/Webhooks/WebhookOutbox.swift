import Entitlements
import Events
import Store
import Toolkit

/// What the projection records for outbound webhooks, in its transaction: each applied event with each
/// entitlement it touched (a message, its lane the entitlement's key), and one pending delivery per
/// events endpoint whose filters take it. Written in the order applied, so the sequence is each lane's order.
public struct WebhookOutbox: AppliedEventRecorder {
    let endpoints: [WebhookEndpoint]
    let wakeup: WebhookWakeup

    public init(endpoints: [WebhookEndpoint], wakeup: WebhookWakeup) {
        self.endpoints = endpoints.filter { $0.kind == .events }
        self.wakeup = wakeup
    }

    /// One message to write, with the endpoints that take it.
    struct Row {
        var values: [SQLValue]
        var messageId: String
        var lane: String
        var endpoints: [String]
    }

    public func record(_ applied: [AppliedEvent], nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> (@Sendable () -> Void)? {
        let rows = applied.compactMap { one -> Row? in
            let takers = endpoints.filter { $0.takes(one) }.map(\.name)
            guard !takers.isEmpty else { return nil }
            let e = one.entitlement
            let lane = Self.lane(app: e.app, environment: e.environment, user: e.user, product: e.product)
            let messageId = Self.messageId(eventId: one.event.id, lane: lane)
            return Row(values: [.text(messageId), .text(lane), .text(e.app), .text(e.environment), .text(e.user), .text(e.product),
                                .text(one.event.id), .text(one.event.type.rawValue), .text(String(decoding: EventCoding.encode(one.event), as: UTF8.self)),
                                .text(e.source), .text(e.subject), .text(e.state.rawValue), .bool(one.active), SQLValue(e.expiresAtMs),
                                SQLValue(e.gracePeriodExpiresAtMs), SQLValue(one.transferredFrom), SQLValue(one.transferredTo),
                                SQLValue(e.quantity.map(Int64.init))],
                       messageId: messageId, lane: lane, endpoints: takers)
        }
        guard !rows.isEmpty else { return nil }
        if connection.dialect == .postgres {
            try Self.insertInBulk(rows, nowMs: nowMs, on: connection)
        } else {
            for row in rows {
                let inserted = try connection.query("""
                    INSERT INTO webhook_messages (\(Self.columns), created_at_ms)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
                    ON CONFLICT (message_id) DO NOTHING RETURNING sequence
                    """, row.values + [.int(nowMs)])
                // Already recorded (the same event applied again cannot happen; a message id is never reused).
                guard let sequence = inserted.first?.int("sequence") else { continue }
                for endpoint in row.endpoints {
                    try WebhookQueue.enqueue(endpoint: endpoint, sequence: sequence, lane: row.lane, nowMs: nowMs, on: connection)
                }
            }
        }
        let wakeup = wakeup
        return { wakeup.signal() }
    }

    static let columns = """
        message_id, lane, app, environment, user_id, product, event_id, event_type, event_json, source, subject, state, active,
        expires_at_ms, grace_expires_at_ms, transferred_from, transferred_to, quantity
        """

    /// PostgreSQL: two statements per batch, as the projection's own phases (a round trip each), the
    /// messages in order (their sequences taken row by row as the rows come out).
    private static func insertInBulk(_ rows: [Row], nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        let text = { (index: Int) -> SQLValue in
            .textArray(rows.map { row in if case .text(let value) = row.values[index] { value } else { nil } })
        }
        let int = { (index: Int) -> SQLValue in
            .intArray(rows.map { row in if case .int(let value) = row.values[index] { value } else { nil } })
        }
        let inserted = try connection.query("""
            INSERT INTO webhook_messages (\(columns), created_at_ms)
            SELECT message_id, lane, app, environment, user_id, product, event_id, event_type, event_json, source, subject, state, active,
                   expires_at_ms, grace_expires_at_ms, transferred_from, transferred_to, quantity, $18::bigint
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                        $10::text[], $11::text[], $12::text[], $13::int[], $14::bigint[], $15::bigint[], $16::text[], $17::text[], $19::int[])
                WITH ORDINALITY AS t(message_id, lane, app, environment, user_id, product, event_id, event_type, event_json, source, subject,
                                     state, active, expires_at_ms, grace_expires_at_ms, transferred_from, transferred_to, quantity, ord)
            ORDER BY ord
            ON CONFLICT (message_id) DO NOTHING RETURNING sequence, message_id
            """, (0..<12).map(text) + [int(12), int(13), int(14), text(15), text(16), .int(nowMs), int(17)])
        var sequences: [String: Int64] = [:]
        for row in inserted {
            if let id = row.text("message_id"), let sequence = row.int("sequence") { sequences[id] = sequence }
        }
        var endpoints: [String?] = [], messages: [Int64?] = [], lanes: [String?] = []
        for row in rows {
            guard let sequence = sequences[row.messageId] else { continue }
            for endpoint in row.endpoints {
                endpoints.append(endpoint)
                messages.append(sequence)
                lanes.append(row.lane)
            }
        }
        guard !endpoints.isEmpty else { return }
        // Not due before what waits ahead of it in its lane (as `WebhookQueue.enqueue`).
        try connection.execute("""
            INSERT INTO webhook_deliveries (endpoint, message_sequence, lane, status, attempts, next_attempt_at_ms, claimed_until_ms,
                                            created_at_ms, updated_at_ms)
            SELECT t.endpoint, t.message_sequence, t.lane, 'pending', 0,
                   GREATEST($4::bigint, COALESCE((SELECT MAX(d.next_attempt_at_ms) FROM webhook_deliveries d
                                                  WHERE d.endpoint = t.endpoint AND d.lane = t.lane AND d.status = 'pending'), $4::bigint)),
                   0, $4::bigint, $4::bigint
            FROM unnest($1::text[], $2::bigint[], $3::text[]) AS t(endpoint, message_sequence, lane)
            ON CONFLICT (endpoint, message_sequence) DO NOTHING
            """, [.textArray(endpoints), .intArray(messages), .textArray(lanes), .int(nowMs)])
    }

    /// An entitlement's key as one text: each part's length before it, so no user id can make two keys alike.
    static func lane(app: String, environment: String, user: String, product: String) -> String {
        [app, environment, user, product].map { "\($0.utf8.count):\($0)" }.joined(separator: "/")
    }

    /// `msg_` and 32 hex digits of SHA-256 over the event id and the lane: the same message (and so the
    /// same `webhook-id`) on every attempt and replay, and another for each entitlement an event touched.
    static func messageId(eventId: String, lane: String) -> String {
        "msg_" + Digest.hex(Array(Digest.sha256(Array("\(eventId.utf8.count):\(eventId)/\(lane)".utf8)).prefix(16)))
    }
}
