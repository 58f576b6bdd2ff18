import Store

/// Where one reconciliation job stands for one scope (`reconcile_checkpoints`): everything before
/// `doneThroughMs` was read back, and a window in progress (`window`) continues from `pageToken`.
public struct ReconcileCheckpoint: Sendable, Equatable {
    public struct Window: Sendable, Equatable {
        public var startMs: Int64
        public var endMs: Int64
        /// The store's token for the next page; nil before the first page.
        public var pageToken: String?

        public init(startMs: Int64, endMs: Int64, pageToken: String?) {
            self.startMs = startMs
            self.endMs = endMs
            self.pageToken = pageToken
        }
    }

    public var doneThroughMs: Int64?
    public var window: Window?

    public init(doneThroughMs: Int64?, window: Window?) {
        self.doneThroughMs = doneThroughMs
        self.window = window
    }
}

extension EntitlementStore {
    /// When the job last moved a checkpoint (of any scope); nil when it has none.
    public func latestReconcileCheckpointUpdateMs(job: String) async throws(StoreError) -> Int64? {
        try await database.read { connection throws(StoreError) in
            try connection.query("SELECT MAX(updated_at_ms) AS latest FROM reconcile_checkpoints WHERE job = $1", [.text(job)]).first?.int("latest")
        }
    }

    public func reconcileCheckpoint(job: String, scope: String) async throws(StoreError) -> ReconcileCheckpoint? {
        try await database.read { connection throws(StoreError) in
            let rows = try connection.query("""
                SELECT done_through_ms, window_start_ms, window_end_ms, page_token FROM reconcile_checkpoints
                WHERE job = $1 AND scope = $2
                """, [.text(job), .text(scope)])
            guard let row = rows.first else { return nil }
            var window: ReconcileCheckpoint.Window?
            if let start = row.int("window_start_ms"), let end = row.int("window_end_ms") {
                window = .init(startMs: start, endMs: end, pageToken: row.text("page_token"))
            }
            return ReconcileCheckpoint(doneThroughMs: row.int("done_through_ms"), window: window)
        }
    }

    public func saveReconcileCheckpoint(_ checkpoint: ReconcileCheckpoint, job: String, scope: String,
                                        nowMs: Int64) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                INSERT INTO reconcile_checkpoints (job, scope, done_through_ms, window_start_ms, window_end_ms, page_token, updated_at_ms)
                VALUES ($1, $2, $3, $4, $5, $6, $7)
                ON CONFLICT (job, scope) DO UPDATE SET done_through_ms = excluded.done_through_ms,
                    window_start_ms = excluded.window_start_ms, window_end_ms = excluded.window_end_ms,
                    page_token = excluded.page_token, updated_at_ms = excluded.updated_at_ms
                """, [.text(job), .text(scope), SQLValue(checkpoint.doneThroughMs), SQLValue(checkpoint.window?.startMs),
                      SQLValue(checkpoint.window?.endMs), SQLValue(checkpoint.window?.pageToken), .int(nowMs)])
        }
    }
}
