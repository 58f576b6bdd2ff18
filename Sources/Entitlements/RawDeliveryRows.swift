import Store

/// The raw deliveries behind each event (`raw_deliveries`, migration 21): where the gateway wrote each
/// verified delivery (its raw record's position), when and where it arrived, and the events it carried.
/// The workers' raw-delivery index writes it while the operator console is on; a purchase's story reads
/// it by event id, and the record's position fetches the body itself from the raw topic.
public enum RawDeliveryRows {
    public struct Delivery: Sendable, Equatable {
        public var eventId: String
        public var source: String
        public var position: PurchaseHistoryRows.Position
        /// When the gateway received it (RFC 3339, as the raw record's header says).
        public var receivedAt: String?
        public var path: String?
        /// The configured credential's scope that authenticated it (an app, an account), where one did.
        public var scope: String?
        public var bodyBytes: Int64
        /// The body as a page shows it (indented, every credential withheld: the index's caller made it so), at
        /// most 64 KiB; nil for a larger one, which the delivery's page reads from the raw topic.
        public var bodyShown: String?

        public init(eventId: String, source: String, position: PurchaseHistoryRows.Position, receivedAt: String?, path: String?,
                    scope: String?, bodyBytes: Int64, bodyShown: String? = nil) {
            self.bodyShown = bodyShown
            self.eventId = eventId
            self.source = source
            self.position = position
            self.receivedAt = receivedAt
            self.path = path
            self.scope = scope
            self.bodyBytes = bodyBytes
        }
    }
}

extension EntitlementStore {
    /// Records deliveries (a record read again is recorded once). Texts that are not `searchable` (over
    /// 512 bytes, control characters: a sender's bytes PostgreSQL would refuse) are left out, and a
    /// delivery whose event id is one of them is not indexed at all, so a hostile id never fails the batch.
    public func recordRawDeliveries(_ deliveries: [RawDeliveryRows.Delivery], nowMs: Int64) async throws(StoreError) {
        let rows: [[SQLValue]] = deliveries.compactMap { d in
            guard let eventId = PurchaseHistoryRows.searchable(d.eventId) else { return nil }
            func optional(_ text: String?) -> SQLValue { PurchaseHistoryRows.searchable(text).map(SQLValue.text) ?? .null }
            // PostgreSQL refuses NUL in text: a body shown with one (escaped JSON never has one) is not kept.
            let shown = d.bodyShown.flatMap { $0.utf8.count <= 65_536 && !$0.utf8.contains(0) ? $0 : nil }
            return [.text(eventId), .text(d.source), .text(d.position.topic), .int(Int64(d.position.partition)), .int(d.position.offset),
                    optional(d.receivedAt), optional(d.path), optional(d.scope), .int(d.bodyBytes), shown.map(SQLValue.text) ?? .null, .int(nowMs)]
        }
        guard !rows.isEmpty else { return }
        try await database.transaction { connection throws(StoreError) in
            // A statement per 100 rows, as the history writes.
            var start = 0
            while start < rows.count {
                let chunk = rows[start..<min(start + 100, rows.count)]
                let tuples = chunk.indices.map { row in
                    "(" + (0..<11).map { "$\((row - start) * 11 + $0 + 1)" }.joined(separator: ", ") + ")"
                }
                try connection.execute("""
                    INSERT INTO raw_deliveries (event_id, source, record_topic, record_partition, record_offset, received_at, path, scope,
                        body_bytes, body_shown, recorded_at_ms)
                    VALUES \(tuples.joined(separator: ", "))
                    ON CONFLICT (record_topic, record_partition, record_offset, event_id) DO NOTHING
                    """, Array(chunk.joined()))
                start += chunk.count
            }
        }
    }

    /// The deliveries that carried these events, oldest first (a redelivered webhook carried its event more than once).
    public func rawDeliveries(ofEvents eventIds: [String], limit: Int = 500) async throws(StoreError) -> [RawDeliveryRows.Delivery] {
        guard !eventIds.isEmpty else { return [] }
        return try await database.read { connection throws(StoreError) in
            var found: [RawDeliveryRows.Delivery] = []
            // 100 ids a statement: a purchase's story names at most 500.
            var start = 0
            while start < eventIds.count, found.count < limit {
                let chunk = eventIds[start..<min(start + 100, eventIds.count)]
                let marks = chunk.indices.map { "$\($0 - start + 1)" }.joined(separator: ", ")
                // A delivery's body is kept with its first event's row: the others read it from there.
                found += try connection.query("""
                    SELECT r.event_id, r.source, r.record_topic, r.record_partition, r.record_offset, r.received_at, r.path, r.scope,
                        r.body_bytes, r.recorded_at_ms,
                        COALESCE(r.body_shown, (SELECT b.body_shown FROM raw_deliveries b WHERE b.record_topic = r.record_topic
                            AND b.record_partition = r.record_partition AND b.record_offset = r.record_offset AND b.body_shown IS NOT NULL
                            LIMIT 1)) AS body_shown
                    FROM raw_deliveries r WHERE r.event_id IN (\(marks)) ORDER BY r.recorded_at_ms, r.record_offset LIMIT \(limit)
                    """, chunk.map(SQLValue.text)).compactMap(Self.rawDelivery)
                start += chunk.count
            }
            return Array(found.prefix(limit))
        }
    }

    /// The events recorded for the delivery at this raw record's position (none when the index holds none there).
    public func rawDeliveries(source: String, partition: Int32, offset: Int64) async throws(StoreError) -> [RawDeliveryRows.Delivery] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT * FROM raw_deliveries WHERE source = $1 AND record_partition = $2 AND record_offset = $3
                ORDER BY event_id LIMIT 100
                """, [.text(source), .int(Int64(partition)), .int(offset)]).compactMap(Self.rawDelivery)
        }
    }

    /// The purchases whose history holds these events: where a delivery's events went.
    public func purchaseIds(ofEvents eventIds: [String]) async throws(StoreError) -> [(eventId: String, purchaseId: String)] {
        guard !eventIds.isEmpty else { return [] }
        return try await database.read { connection throws(StoreError) in
            let ids = Array(eventIds.prefix(100))
            let marks = ids.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
            return try connection.query("""
                SELECT event_id, purchase_id FROM purchase_history WHERE event_id IN (\(marks)) ORDER BY sequence LIMIT 200
                """, ids.map(SQLValue.text)).compactMap { row in
                guard let event = row.text("event_id"), let purchase = row.text("purchase_id") else { return nil }
                return (event, purchase)
            }
        }
    }

    /// Deletes up to `limit` deliveries recorded before `beforeMs`; returns how many.
    public func pruneRawDeliveries(beforeMs: Int64, limit: Int = 5_000) async throws(StoreError) -> Int {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                DELETE FROM raw_deliveries WHERE (record_topic, record_partition, record_offset, event_id) IN (
                    SELECT record_topic, record_partition, record_offset, event_id FROM raw_deliveries
                    WHERE recorded_at_ms < $1 ORDER BY recorded_at_ms LIMIT $2)
                """, [.int(beforeMs), .int(Int64(limit))])
        }
    }

    private static func rawDelivery(_ row: SQLRow) -> RawDeliveryRows.Delivery? {
        guard let eventId = row.text("event_id"), let source = row.text("source"), let topic = row.text("record_topic"),
              let partition = row.int("record_partition"), let offset = row.int("record_offset"), let bytes = row.int("body_bytes")
        else { return nil }
        return .init(eventId: eventId, source: source,
                     position: .init(topic: topic, partition: Int32(truncatingIfNeeded: partition), offset: offset),
                     receivedAt: row.text("received_at"), path: row.text("path"), scope: row.text("scope"), bodyBytes: bytes,
                     bodyShown: row.text("body_shown"))
    }
}
