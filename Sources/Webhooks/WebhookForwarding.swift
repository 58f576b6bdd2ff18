import Config
import Entitlements
import Events
import Foundation
import Store
import Toolkit

/// A sender's request as Tollgate verified it, what a forward endpoint receives: the body as the raw
/// topic holds it (the exact bytes, or the sender's kept body without the credential it carried) and
/// the request headers kept with it, but for those that only describe the hop to Tollgate.
public struct ForwardedRequest: Sendable, Equatable {
    public struct Header: Sendable, Codable, Equatable {
        public var name: String
        public var value: String
    }

    public var body: [UInt8]
    public var headers: [Header]

    /// Kept by the gateway, not sent on: they describe the request's way to Tollgate, not the sender's
    /// request (and `host`, the framing and our own signature headers are the dispatcher's to write).
    static func forwards(_ name: String) -> Bool {
        !["x-forwarded-for", "x-request-id", "host", "content-length", "transfer-encoding", "connection"].contains(name)
            && !name.hasPrefix("webhook-")
    }

    var headersJSON: String { String(decoding: (try? JSONEncoder().encode(headers)) ?? Data("[]".utf8), as: UTF8.self) }

    static func headers(json: String) -> [Header]? { try? JSONDecoder().decode([Header].self, from: Data(json.utf8)) }
}

/// One record of a raw topic (`raw.<sender>`: a delivery the gateway verified), as forward endpoints
/// are routed by: its sender, app and environment (`RawRecordHeaders`).
public struct ForwardedDelivery: Sendable {
    public var sender: SourceName
    /// The raw record's key (the purchase, for most senders): forwarded deliveries with one key keep their order.
    var key: [UInt8]
    var app, environment: String
    /// The first event's `ce_id` and type, for an operator's listing; empty when the delivery had none.
    var eventId, eventType: String
    var receivedAtMs: Int64?
    var request: ForwardedRequest

    public init(sender: SourceName, key: [UInt8]?, body: [UInt8], recordHeaders: [(name: String, value: String?)], timestampMs: Int64?) {
        self.sender = sender
        self.key = key ?? []
        var app = "", environment = "", eventId = "", eventType = ""
        var received: Int64?
        var headers: [ForwardedRequest.Header] = []
        for header in recordHeaders {
            let value = header.value ?? ""
            switch header.name {
            case RawRecordHeaders.app: app = value
            case RawRecordHeaders.environment: environment = value
            case CloudEventHeaders.id: eventId = value
            case CloudEventHeaders.type: eventType = EventType(cloudEventType: value)?.rawValue ?? ""
            case RawRecordHeaders.receivedAt: received = Timestamp(rfc3339: value)?.millisecondsSince1970
            default:
                if header.name.hasPrefix(RawRecordHeaders.requestHeaderPrefix) {
                    let name = String(header.name.dropFirst(RawRecordHeaders.requestHeaderPrefix.count))
                    if ForwardedRequest.forwards(name) { headers.append(.init(name: name, value: value)) }
                }
            }
        }
        self.app = app
        self.environment = environment
        self.eventId = eventId
        self.eventType = eventType
        receivedAtMs = received ?? timestampMs
        request = ForwardedRequest(body: body, headers: headers)
    }
}

/// Records the deliveries the gateway verified for the forward endpoints that take them (the workers'
/// forwarding consumer reads them from the raw topics): one message per delivery, its id from the sender
/// and the body, so a record read again or a notification the sender sent twice records nothing new;
/// one delivery per endpoint, in lanes by sender and raw key (a purchase's forwarded requests in order).
public struct WebhookForwarding: Sendable {
    let endpoints: [WebhookEndpoint]
    let database: SQLDatabase
    let wakeup: WebhookWakeup
    /// `webhooks.retentionDays`: how long a recorded message (and so its id) is kept.
    let retentionMs: Int64

    /// nil when no endpoint forwards.
    public init?(endpoints: [WebhookEndpoint], retentionDays: Int, store: EntitlementStore, wakeup: WebhookWakeup) {
        let forwarding = endpoints.filter { $0.kind == .forward }
        guard !forwarding.isEmpty else { return nil }
        self.endpoints = forwarding
        retentionMs = Int64(retentionDays) * 86_400_000
        database = store.database
        self.wakeup = wakeup
    }

    /// Since when each endpoint forwards: its first start with this store, kept. The consumer reads the
    /// raw topics from their start once, and a new endpoint does not receive what arrived before it.
    public func start(nowMs: Int64) async throws(StoreError) -> [String: Int64] {
        let names = endpoints.map(\.name)
        return try await database.transaction { connection throws(StoreError) in
            var since: [String: Int64] = [:]
            for name in names {
                try connection.execute("""
                    INSERT INTO webhook_endpoints (endpoint, disabled, failing_since_ms, updated_at_ms, forwarding_since_ms)
                    VALUES ($1, 0, NULL, $2, $2)
                    ON CONFLICT (endpoint) DO UPDATE SET forwarding_since_ms = $2 WHERE webhook_endpoints.forwarding_since_ms IS NULL
                    """, [.text(name), .int(nowMs)])
                since[name] = try connection.query("SELECT forwarding_since_ms FROM webhook_endpoints WHERE endpoint = $1",
                                                   [.text(name)]).first?.int("forwarding_since_ms") ?? nowMs
            }
            return since
        }
    }

    /// Records the deliveries the endpoints take (received since their `start`, and within the retention:
    /// an older one's message may be pruned, so reading it again, after the group lost its offsets, would
    /// send it twice), in one transaction. Returns how many messages it recorded.
    @discardableResult
    public func record(_ deliveries: [ForwardedDelivery], since: [String: Int64], nowMs: Int64) async throws(StoreError) -> Int {
        let kept = nowMs - retentionMs
        let rows = deliveries.compactMap { delivery -> (ForwardedDelivery, [String])? in
            let received = delivery.receivedAtMs ?? nowMs
            let takers = endpoints.filter { endpoint in
                endpoint.takes(delivery) && received >= max(since[endpoint.name] ?? nowMs, kept)
            }.map(\.name)
            return takers.isEmpty ? nil : (delivery, takers)
        }
        guard !rows.isEmpty else { return 0 }
        let recorded = try await database.transaction { connection throws(StoreError) in
            var recorded = 0
            for (delivery, takers) in rows {
                let lane = Self.lane(sender: delivery.sender, key: delivery.key)
                let inserted = try connection.query("""
                    INSERT INTO webhook_messages (message_id, lane, app, environment, event_id, event_type, source, active, created_at_ms,
                                                  kind, body, forward_headers, user_id, product, event_json, subject, state)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'forward', $10, $11, '', '', '', '', '')
                    ON CONFLICT (message_id) DO NOTHING RETURNING sequence
                    """, [.text(Self.messageId(sender: delivery.sender, body: delivery.request.body)), .text(lane), .text(delivery.app),
                          .text(delivery.environment), .text(delivery.eventId), .text(delivery.eventType), .text(delivery.sender.rawValue),
                          .bool(false), .int(nowMs), .blob(delivery.request.body), .text(delivery.request.headersJSON)])
                guard let sequence = inserted.first?.int("sequence") else { continue }
                recorded += 1
                for endpoint in takers {
                    try WebhookQueue.enqueue(endpoint: endpoint, sequence: sequence, lane: lane, nowMs: nowMs, on: connection)
                }
            }
            return recorded
        }
        if recorded > 0 { wakeup.signal() }
        return recorded
    }

    /// `forward/` and a hash of the sender and key: the key may be a purchase token, which a lane need not hold.
    static func lane(sender: SourceName, key: [UInt8]) -> String {
        "forward/" + Digest.hex(Array(Digest.sha256(Array("\(sender.rawValue.utf8.count):\(sender.rawValue)/".utf8) + key).prefix(16)))
    }

    /// `msg_` and 32 hex digits of SHA-256 over the sender and the body.
    static func messageId(sender: SourceName, body: [UInt8]) -> String {
        "msg_" + Digest.hex(Array(Digest.sha256(Array("forward/\(sender.rawValue.utf8.count):\(sender.rawValue)/".utf8) + body).prefix(16)))
    }
}
