import Store

/// The purchases the at-risk refresh re-reads from their store, and when it last read each
/// (`purchase_refreshes`, migration 17): what a lost notification would leave wrong the longest.
extension EntitlementStore {
    /// States in which a purchase waits on its store: a payment being retried or awaited.
    public static let atRiskStates: [PurchaseState] = [.gracePeriod, .billingRetry, .onHold, .pending]

    /// Up to `limit` purchases of `sources` due for a read at `nowMs`: in an at-risk state, or an active
    /// subscription whose paid period ends before `nowMs + aheadMs` (a renewal would have moved it) or
    /// ended at most `behindMs` ago while still active here; none read within `spacingMs`, none the store
    /// said it no longer knows with no event since. Production first, then those never read, then the
    /// longest unread: sandbox purchases, which anyone can make, never hold back paid ones.
    public func purchasesAtRisk(sources: [String], nowMs: Int64, aheadMs: Int64, behindMs: Int64, spacingMs: Int64,
                                limit: Int) async throws(StoreError) -> [Purchase] {
        guard !sources.isEmpty else { return [] }
        let states = Self.atRiskStates.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        let sourceList = sources.indices.map { "$\($0 + 5)" }.joined(separator: ", ")
        let columns = PurchaseRow.columns.split(separator: ",").map { "p." + $0.drop { $0 == " " } }
            .joined(separator: ", ")
        return try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT \(columns) FROM purchases p
                LEFT JOIN purchase_refreshes r
                    ON r.source = p.source AND r.app = p.app AND r.environment = p.environment AND r.subject = p.subject
                WHERE p.source IN (\(sourceList))
                  AND (p.state IN (\(states))
                       OR (p.state = 'active' AND p.kind = 'subscription' AND p.expires_at_ms > $1 AND p.expires_at_ms <= $2))
                  AND (r.read_at_ms IS NULL OR r.read_at_ms <= $3)
                  AND (r.outcome IS NULL OR r.outcome <> 'not_found' OR r.read_at_ms < p.last_event_at_ms)
                ORDER BY CASE WHEN p.environment = 'production' THEN 0 ELSE 1 END, COALESCE(r.read_at_ms, 0), p.expires_at_ms
                LIMIT $4
                """, [.int(nowMs - behindMs), .int(nowMs + aheadMs), .int(nowMs - spacingMs), .int(Int64(limit))]
                    + sources.map(SQLValue.text)).compactMap(PurchaseRow.decode)
        }
    }

    /// Notes that the purchase was read from its store at `nowMs` (by the scheduler or the route), and how it went.
    public func recordRefresh(_ key: PurchaseKey, outcome: String, nowMs: Int64) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                INSERT INTO purchase_refreshes (source, app, environment, subject, read_at_ms, outcome) VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (source, app, environment, subject) DO UPDATE SET read_at_ms = excluded.read_at_ms, outcome = excluded.outcome
                """, [.text(key.source), .text(key.app), .text(key.environment), .text(key.subject), .int(nowMs), .text(outcome)])
        }
    }
}

extension EntitlementStore {
    /// When the purchase was last read back from its store, and what came of it (`purchase_refreshes`).
    public func lastRefresh(_ key: PurchaseKey) async throws(StoreError) -> (atMs: Int64, outcome: String)? {
        try await database.read { connection throws(StoreError) in
            guard let row = try connection.query("""
                SELECT read_at_ms, outcome FROM purchase_refreshes WHERE source = $1 AND app = $2 AND environment = $3 AND subject = $4
                """, [.text(key.source), .text(key.app), .text(key.environment), .text(key.subject)]).first,
                  let at = row.int("read_at_ms"), let outcome = row.text("outcome") else { return nil }
            return (at, outcome)
        }
    }
}
