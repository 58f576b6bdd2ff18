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

    public func record(_ applied: [AppliedEvent], nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> (@Sendable () -> Void)? {
        var queued = false
        for one in applied {
            let takers = endpoints.filter { $0.takes(one) }
            guard !takers.isEmpty else { continue }
            let e = one.entitlement
            let lane = Self.lane(app: e.app, environment: e.environment, user: e.user, product: e.product)
            let rows = try connection.query("""
                INSERT INTO webhook_messages (message_id, lane, app, environment, user_id, product, event_id, event_type, event_json,
                                              source, subject, state, active, expires_at_ms, grace_expires_at_ms,
                                              transferred_from, transferred_to, created_at_ms)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
                ON CONFLICT (message_id) DO NOTHING RETURNING sequence
                """, [.text(Self.messageId(eventId: one.event.id, lane: lane)), .text(lane), .text(e.app), .text(e.environment),
                      .text(e.user), .text(e.product), .text(one.event.id), .text(one.event.type.rawValue),
                      .text(String(decoding: EventCoding.encode(one.event), as: UTF8.self)), .text(e.source), .text(e.subject),
                      .text(e.state.rawValue), .bool(one.active), SQLValue(e.expiresAtMs), SQLValue(e.gracePeriodExpiresAtMs),
                      SQLValue(one.transferredFrom), SQLValue(one.transferredTo), .int(nowMs)])
            // Already recorded (the same event applied again cannot happen; a message id is never reused).
            guard let sequence = rows.first?.int("sequence") else { continue }
            for endpoint in takers {
                try WebhookQueue.enqueue(endpoint: endpoint.name, sequence: sequence, lane: lane, nowMs: nowMs, on: connection)
            }
            queued = true
        }
        guard queued else { return nil }
        let wakeup = wakeup
        return { wakeup.signal() }
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
