import Events
import Foundation
import Store

/// Each purchase's history (`purchase_history`, migration 20), written by the projection in its
/// transaction: every event that touched the purchase, once, with what it did (applied, or unchanged:
/// older than what the store holds, or held back), the purchase's state after it and the entitlements
/// it left. The operator console reads a purchase's story here instead of scanning topics; rows older
/// than `console.historyDays` are pruned.
public enum PurchaseHistoryRows {
    /// Where an event's record was read: `topic/partition/offset`.
    public struct Position: Sendable, Equatable {
        public var topic: String
        public var partition: Int32
        public var offset: Int64
        public init(topic: String, partition: Int32, offset: Int64) {
            self.topic = topic
            self.partition = partition
            self.offset = offset
        }
    }

    /// An entitlement as an event left it.
    public struct EntitlementAfter: Codable, Sendable, Equatable {
        public var app: String
        public var environment: String
        public var user: String
        public var product: String
        public var state: String
        public var active: Bool
        public var expiresAtMs: Int64?
        public var gracePeriodExpiresAtMs: Int64?
        public var transferredFrom: String?
        public var transferredTo: String?
    }

    /// One row: an event and what it did to one purchase.
    public struct Entry: Sendable, Equatable {
        public var purchaseId: String
        public var eventId: String
        public var type: String
        public var source: String
        public var app: String
        public var environment: String
        public var user: String?
        public var transactionId: String?
        public var occurredAt: String
        public var receivedAt: String
        public var outcome: String
        public var stateAfter: String?
        public var position: Position?
        public var eventJSON: String
        public var entitlements: [EntitlementAfter]
        public var recordedAtMs: Int64
    }

    /// The batch's fresh changes that carry their event (`PurchaseChange.history`), in order.
    static func append(_ changes: [PurchaseChange], fresh: [Bool], outcomes: [ApplyOutcome], steps: [BatchPlan.Step],
                       applied: [AppliedEvent], ids: PurchaseIds, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        let keys = Dictionary(changes.map { ($0.eventId, $0.key) }, uniquingKeysWith: { first, _ in first })
        var stateAfter: [String: String] = [:]
        for step in steps {
            for purchase in step.writes where purchase.key == keys[step.eventId] { stateAfter[step.eventId] = purchase.state.rawValue }
        }
        var left: [String: [EntitlementAfter]] = [:]
        for each in applied {
            let e = each.entitlement
            left[each.event.id, default: []].append(EntitlementAfter(
                app: e.app, environment: e.environment, user: e.user, product: e.product, state: e.state.rawValue, active: each.active,
                expiresAtMs: e.expiresAtMs, gracePeriodExpiresAtMs: e.gracePeriodExpiresAtMs, transferredFrom: each.transferredFrom,
                transferredTo: each.transferredTo))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var rows: [[SQLValue]] = []
        for (index, change) in changes.enumerated() where fresh[index] {
            guard let event = change.event, let history = change.history, outcomes[index] != .duplicate else { continue }
            let outcome = outcomes[index] == .applied ? "applied" : "unchanged"
            let entitlements = (try? encoder.encode(left[event.id] ?? [])).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
            rows.append(row(event, key: change.key, ids: ids, outcome: outcome, stateAfter: stateAfter[event.id], position: history.position,
                            transactionId: event.transaction?.id ?? history.orderId, entitlementsJSON: entitlements, nowMs: nowMs))
        }
        try insert(rows, on: connection)
    }

    /// One row's values, in `insert`'s column order.
    static func row(_ event: NormalizedEvent, key: PurchaseKey, ids: PurchaseIds, outcome: String, stateAfter: String?, position: Position?,
                    transactionId: String?, entitlementsJSON: String, nowMs: Int64) -> [SQLValue] {
        [.text(ids.id(of: key)), .text(event.id), .text(event.type.rawValue), .text(key.source), .text(event.app),
         .text(key.environment), searchable(event.user).map(SQLValue.text) ?? .null,
         searchable(transactionId).map(SQLValue.text) ?? .null, .text(event.occurredAt), .text(event.receivedAt),
         .text(outcome), stateAfter.map(SQLValue.text) ?? .null,
         position.map { .text($0.topic) } ?? .null, position.map { .int(Int64($0.partition)) } ?? .null, position.map { .int($0.offset) } ?? .null,
         .text(String(decoding: EventCoding.encode(event), as: UTF8.self)), .text(entitlementsJSON), .int(nowMs)]
    }

    /// A statement per 100 rows: one round trip on PostgreSQL for a whole batch of the usual size.
    static func insert(_ rows: [[SQLValue]], on connection: any SQLConnection) throws(StoreError) {
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(start + 100, rows.count)]
            let width = chunk.first?.count ?? 0
            let tuples = chunk.indices.map { row in
                "(" + (0..<width).map { "$\((row - start) * width + $0 + 1)" }.joined(separator: ", ") + ")"
            }
            try connection.execute("""
                INSERT INTO purchase_history (purchase_id, event_id, type, source, app, environment, user_id, transaction_id,
                    occurred_at, received_at, outcome, state_after, record_topic, record_partition, record_offset, event_json,
                    entitlements_json, recorded_at_ms)
                VALUES \(tuples.joined(separator: ", "))
                ON CONFLICT (purchase_id, event_id) DO NOTHING
                """, Array(chunk.joined()))
            start += chunk.count
        }
    }
}

/// An event the projection held back before the store (its sender's API did not confirm it, and reports
/// nothing to apply instead): kept in its purchase's history with the outcome `unconfirmed`, so the story
/// shows the notification that arrived and why it changed nothing.
public struct UnconfirmedEventNote: Sendable {
    let event: NormalizedEvent
    let key: PurchaseKey
    let position: PurchaseHistoryRows.Position?

    public init(event: NormalizedEvent, key: PurchaseKey, position: PurchaseHistoryRows.Position?) {
        self.event = event
        self.key = key
        self.position = position
    }
}

extension EntitlementStore {
    /// Notes held-back events in their purchases' histories, outside the projection's transaction and
    /// its processed ids (a genuine event the API did not list yet can still be applied when replayed).
    /// Best effort: an id a store would refuse is not noted, a note not written is only a missing line.
    /// The transaction a sender claims is not indexed: an unconfirmed event must not make a search find it.
    public func noteUnconfirmed(_ notes: [UnconfirmedEventNote], nowMs: Int64) async {
        let rows = notes.compactMap { note -> [SQLValue]? in
            guard PurchaseHistoryRows.searchable(note.event.id) != nil, PurchaseHistoryRows.searchable(note.key.subject) != nil else { return nil }
            return PurchaseHistoryRows.row(note.event, key: note.key, ids: purchaseIds, outcome: "unconfirmed", stateAfter: nil,
                                           position: note.position, transactionId: nil, entitlementsJSON: "[]", nowMs: nowMs)
        }
        guard !rows.isEmpty else { return }
        _ = try? await database.transaction { connection throws(StoreError) in try PurchaseHistoryRows.insert(rows, on: connection) }
    }
}

extension PurchaseHistoryRows {
    /// A sender's id as an indexed column keeps it: at most 512 bytes, no control character (PostgreSQL
    /// refuses NUL, and its index refuses long keys), else not kept, so a hostile id never fails the batch.
    static func searchable(_ text: String?) -> String? {
        guard let text, !text.isEmpty, text.utf8.count <= 512, !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        return text
    }
}

/// What the projection keeps of a change for its purchase's history (`PurchaseChange.history`).
public struct HistoryNote: Sendable {
    public var position: PurchaseHistoryRows.Position?
    /// The order the sender's API named for an event that names no transaction (`PurchaseSnapshot.orderId`).
    public var orderId: String?
    public init(position: PurchaseHistoryRows.Position?, orderId: String? = nil) {
        self.position = position
        self.orderId = orderId
    }
}

extension EntitlementStore {
    /// A purchase's history, oldest first (at most `limit` rows, the newest of them).
    public func history(ofPurchase purchaseId: String, limit: Int = 500) async throws(StoreError) -> [PurchaseHistoryRows.Entry] {
        try await database.read { connection throws(StoreError) in
            let rows = try connection.query("""
                SELECT * FROM purchase_history WHERE purchase_id = $1 ORDER BY sequence DESC LIMIT $2
                """, [.text(purchaseId), .int(Int64(limit))])
            return rows.reversed().compactMap(Self.historyEntry)
        }
    }

    /// The purchases whose history names one of these transaction (or order) ids, or whose subject (an
    /// original transaction id) is one of them.
    public func purchaseIds(withTransactionOrSubject ids: [String], limit: Int = 20) async throws(StoreError) -> [String] {
        try await database.read { connection throws(StoreError) in
            var found: [String] = []
            for id in ids.prefix(4) {
                found += try connection.query("""
                    SELECT DISTINCT purchase_id FROM purchase_history WHERE transaction_id = $1 LIMIT $2
                    """, [.text(id), .int(Int64(limit))]).compactMap { $0.text("purchase_id") }
                found += try connection.query("""
                    SELECT purchase_id FROM purchases WHERE subject = $1 AND purchase_id IS NOT NULL LIMIT $2
                    """, [.text(id), .int(Int64(limit))]).compactMap { $0.text("purchase_id") }
            }
            var seen = Set<String>()
            return Array(found.filter { seen.insert($0).inserted }.prefix(limit))
        }
    }

    /// The purchase a checkout's payment made: the provider's notifications (their sender is the checkout's
    /// provider) name it by the checkout's reference (their subject) in the checkout's environment (checkouts, migration 6).
    public func purchaseIds(forCheckout checkoutId: String, limit: Int = 20) async throws(StoreError) -> [String] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT p.purchase_id FROM checkouts c
                JOIN purchases p ON p.source = c.provider AND p.subject = c.reference AND p.environment = c.environment
                WHERE c.id = $1 AND p.purchase_id IS NOT NULL LIMIT $2
                """, [.text(checkoutId), .int(Int64(limit))]).compactMap { $0.text("purchase_id") }
        }
    }

    /// The history recorded since `sinceMs`, per source and outcome: the console's overview.
    public func historyCounts(sinceMs: Int64) async throws(StoreError) -> [(source: String, outcome: String, count: Int64)] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT source, outcome, COUNT(*) AS n FROM purchase_history WHERE recorded_at_ms >= $1 GROUP BY source, outcome ORDER BY source, outcome
                """, [.int(sinceMs)]).compactMap { row in
                guard let source = row.text("source"), let outcome = row.text("outcome"), let n = row.int("n") else { return nil }
                return (source, outcome, n)
            }
        }
    }

    /// The apps and environments in which the store links purchases to this user (any app: the console's search).
    public func appsAndEnvironments(ofUser user: String, limit: Int = 50) async throws(StoreError) -> [(app: String, environment: String)] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT DISTINCT app, environment FROM purchases WHERE user_id = $1 ORDER BY app, environment LIMIT $2
                """, [.text(user), .int(Int64(limit))]).compactMap { row in
                guard let app = row.text("app"), let environment = row.text("environment") else { return nil }
                return (app, environment)
            }
        }
    }

    /// How many purchases the store keeps, and how many entitlements are active: the console's overview.
    public func totals() async throws(StoreError) -> (purchases: Int64, activeEntitlements: Int64) {
        try await database.read { connection throws(StoreError) in
            let purchases = try connection.query("SELECT COUNT(*) AS n FROM purchases").first?.int("n") ?? 0
            let active = try connection.query("SELECT COUNT(*) AS n FROM entitlements WHERE active = 1").first?.int("n") ?? 0
            return (purchases, active)
        }
    }

    /// Deletes up to `limit` rows recorded before `beforeMs`; returns how many.
    public func pruneHistory(beforeMs: Int64, limit: Int = 5_000) async throws(StoreError) -> Int {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                DELETE FROM purchase_history WHERE sequence IN (
                    SELECT sequence FROM purchase_history WHERE recorded_at_ms < $1 ORDER BY recorded_at_ms LIMIT $2)
                """, [.int(beforeMs), .int(Int64(limit))])
        }
    }

    static func historyEntry(_ row: SQLRow) -> PurchaseHistoryRows.Entry? {
        guard let purchaseId = row.text("purchase_id"), let eventId = row.text("event_id"), let type = row.text("type"),
              let source = row.text("source"), let app = row.text("app"), let environment = row.text("environment"),
              let occurredAt = row.text("occurred_at"), let receivedAt = row.text("received_at"), let outcome = row.text("outcome"),
              let eventJSON = row.text("event_json"), let recordedAt = row.int("recorded_at_ms") else { return nil }
        var position: PurchaseHistoryRows.Position?
        if let topic = row.text("record_topic"), let partition = row.int("record_partition"), let offset = row.int("record_offset") {
            position = .init(topic: topic, partition: Int32(truncatingIfNeeded: partition), offset: offset)
        }
        let entitlements = row.text("entitlements_json").flatMap {
            try? JSONDecoder().decode([PurchaseHistoryRows.EntitlementAfter].self, from: Data($0.utf8))
        } ?? []
        return .init(purchaseId: purchaseId, eventId: eventId, type: type, source: source, app: app, environment: environment,
                     user: row.text("user_id"), transactionId: row.text("transaction_id"), occurredAt: occurredAt, receivedAt: receivedAt,
                     outcome: outcome, stateAfter: row.text("state_after"), position: position, eventJSON: eventJSON,
                     entitlements: entitlements, recordedAtMs: recordedAt)
    }
}

extension EntitlementStore {
    /// The purchases of the latest events the history kept, newest first, each once with its latest event:
    /// what the overview's purchase count opens (read from the history's own order, never a scan of purchases).
    public func recentlyTouchedPurchases(limit: Int = 100) async throws(StoreError) -> [PurchaseHistoryRows.Entry] {
        try await database.read { connection throws(StoreError) in
            var seen = Set<String>()
            return try connection.query("SELECT * FROM purchase_history ORDER BY sequence DESC LIMIT $1", [.int(Int64(limit * 5))])
                .compactMap(Self.historyEntry).filter { seen.insert($0.purchaseId).inserted }.prefix(limit).map { $0 }
        }
    }

    /// Active entitlements in key order (app, environment, user), at most `limit`: what the overview's count opens.
    public func activeEntitlements(limit: Int = 200) async throws(StoreError) -> [(app: String, environment: String, user: String, product: String, state: String)] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT app, environment, user_id, product, state FROM entitlements WHERE active = 1 ORDER BY app, environment, user_id, product LIMIT $1
                """, [.int(Int64(limit))]).compactMap { row in
                guard let app = row.text("app"), let environment = row.text("environment"), let user = row.text("user_id"),
                      let product = row.text("product"), let state = row.text("state") else { return nil }
                return (app, environment, user, product, state)
            }
        }
    }
}
