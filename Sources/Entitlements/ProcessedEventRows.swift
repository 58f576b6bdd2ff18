import Store

/// The `processed_events` table: every event id applied, so each is applied once.
enum ProcessedEventRows {
    /// Records the ids as processed; true at the positions whose event is new: not recorded before,
    /// and the first of its id in `ids`.
    static func mark(_ ids: [String], nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> [Bool] {
        guard connection.dialect == .postgres else {
            var fresh: [Bool] = []
            fresh.reserveCapacity(ids.count)
            for id in ids {
                fresh.append(try connection.execute(
                    "INSERT INTO processed_events (event_id, processed_at_ms) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING",
                    [.text(id), .int(nowMs)]) == 1)
            }
            return fresh
        }
        // Sorted: two workers given the same ids (a redelivery after a rebalance) wait for each other's
        // rows in one order, never in a cycle.
        let unique = Set(ids).sorted()
        guard !unique.isEmpty else { return [] }
        let inserted = try connection.query("""
            INSERT INTO processed_events (event_id, processed_at_ms)
            SELECT id, $2::bigint FROM unnest($1::text[]) AS t(id)
            ON CONFLICT (event_id) DO NOTHING RETURNING event_id
            """, [.textArray(unique), .int(nowMs)])
        var new = Set(inserted.compactMap { $0.text("event_id") })
        // The first occurrence takes the id: a repeat later in the batch is a duplicate.
        return ids.map { new.remove($0) != nil }
    }
}
