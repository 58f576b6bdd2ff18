import Store

/// The calls Tollgate made to a store's API for a purchase (`store_calls`, migration 21): Google Play
/// acknowledgements, Apple consumption answers, refreshes. Kept while the operator console is on, for a
/// purchase's story, and pruned with its history. A purchase is named by its sender, app and subject (an
/// acknowledgement is made before the purchase is stored, and without its environment).
public enum StoreCallRows {
    public struct Call: Sendable, Equatable {
        /// `play.acknowledge`, `apple.consumption_answer`, `refresh`.
        public var call: String
        public var atMs: Int64
        /// What came of it (`acknowledged`, `queued`, `sent`, `changed`...).
        public var outcome: String
        /// A sentence for people, never a token (the API's error kind, a refresh's trigger).
        public var detail: String
    }
}

extension EntitlementStore {
    /// From now on, the calls made for each purchase are kept (the workers, when the console is on).
    public func keepStoreCalls() { keepsStoreCalls.store(true, ordering: .relaxed) }

    /// Notes a call made for the purchase of `source`, `app` and `subject` (nothing unless `keepStoreCalls`).
    /// Best effort: a call is made whether or not its note is kept.
    public func noteStoreCall(_ call: String, source: String, app: String, subject: String, environment: String? = nil,
                              outcome: String, detail: String, nowMs: Int64) async {
        guard keepsStoreCalls.load(ordering: .relaxed) else { return }
        _ = try? await database.transaction { connection throws(StoreError) in
            try Self.insertStoreCall(call, source: source, app: app, subject: subject, environment: environment, outcome: outcome,
                                     detail: detail, nowMs: nowMs, on: connection)
        }
    }

    static func insertStoreCall(_ call: String, source: String, app: String, subject: String, environment: String?, outcome: String,
                                detail: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        try connection.execute("""
            INSERT INTO store_calls (source, app, subject, environment, call, at_ms, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """, [.text(source), .text(app), .text(subject), environment.map(SQLValue.text) ?? .null, .text(call), .int(nowMs),
                  .text(outcome), .text(String(detail.prefix(300)))])
    }

    /// The calls made for a purchase, oldest first (at most `limit`, the newest of them).
    public func storeCalls(_ key: PurchaseKey, limit: Int = 200) async throws(StoreError) -> [StoreCallRows.Call] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT call, at_ms, outcome, detail FROM store_calls
                WHERE source = $1 AND app = $2 AND subject = $3 AND (environment IS NULL OR environment = $4)
                ORDER BY at_ms DESC LIMIT $5
                """, [.text(key.source), .text(key.app), .text(key.subject), .text(key.environment), .int(Int64(limit))]).reversed()
                .compactMap { row in
                    guard let call = row.text("call"), let at = row.int("at_ms"), let outcome = row.text("outcome"),
                          let detail = row.text("detail") else { return nil }
                    return StoreCallRows.Call(call: call, atMs: at, outcome: outcome, detail: detail)
                }
        }
    }

    /// Deletes up to `limit` calls made before `beforeMs`; returns how many.
    public func pruneStoreCalls(beforeMs: Int64, limit: Int = 5_000) async throws(StoreError) -> Int {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                DELETE FROM store_calls WHERE at_ms IN (SELECT at_ms FROM store_calls WHERE at_ms < $1 ORDER BY at_ms LIMIT $2)
                """, [.int(beforeMs), .int(Int64(limit))])
        }
    }
}
