import Store

/// A Play purchase's acknowledgement that Google did not take at once (`play_acknowledgements`): the
/// workers' retry loop asks again at `nextAttemptAtMs` until Google takes it or `deadlineMs` passes.
public struct PendingPlayAcknowledgement: Sendable, Equatable {
    public var packageName: String
    /// `subscription` or `product`: which acknowledge endpoint takes it.
    public var kind: String
    public var productId: String
    public var purchaseToken: String
    public var deadlineMs: Int64
    /// Attempts made so far, the first (before queuing) included.
    public var attempts: Int
    public var nextAttemptAtMs: Int64
    public var queuedAtMs: Int64

    public init(packageName: String, kind: String, productId: String, purchaseToken: String, deadlineMs: Int64, attempts: Int,
                nextAttemptAtMs: Int64, queuedAtMs: Int64) {
        self.packageName = packageName; self.kind = kind; self.productId = productId; self.purchaseToken = purchaseToken
        self.deadlineMs = deadlineMs; self.attempts = attempts; self.nextAttemptAtMs = nextAttemptAtMs; self.queuedAtMs = queuedAtMs
    }
}

extension EntitlementStore {
    /// Queues an acknowledgement; false when it is already queued (its schedule is kept).
    @discardableResult
    public func queuePlayAcknowledgement(_ pending: PendingPlayAcknowledgement, lastError: String?) async throws(StoreError) -> Bool {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                INSERT INTO play_acknowledgements (package_name, kind, product_id, purchase_token, deadline_ms, attempts,
                                                   next_attempt_at_ms, queued_at_ms, last_error)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                ON CONFLICT (package_name, kind, product_id, purchase_token) DO NOTHING
                """, [.text(pending.packageName), .text(pending.kind), .text(pending.productId), .text(pending.purchaseToken),
                      .int(pending.deadlineMs), .int(Int64(pending.attempts)), .int(pending.nextAttemptAtMs),
                      .int(pending.queuedAtMs), SQLValue(lastError)]) == 1
        }
    }

    /// Up to `limit` acknowledgements due at `nowMs`, oldest due first, each claimed until `claimUntilMs`
    /// (its next attempt moved there) so that another replica's loop does not try it meanwhile. Returned
    /// as they were before the claim.
    public func claimDuePlayAcknowledgements(nowMs: Int64, claimUntilMs: Int64, limit: Int) async throws(StoreError) -> [PendingPlayAcknowledgement] {
        try await database.transaction { connection throws(StoreError) in
            let rows = try connection.query("""
                SELECT package_name, kind, product_id, purchase_token, deadline_ms, attempts, next_attempt_at_ms, queued_at_ms
                FROM play_acknowledgements WHERE next_attempt_at_ms <= $1 ORDER BY next_attempt_at_ms LIMIT $2
                """, [.int(nowMs), .int(Int64(limit))])
            var claimed: [PendingPlayAcknowledgement] = []
            for row in rows {
                guard let pending = Self.pendingPlayAcknowledgement(row) else { continue }
                // Only if no other replica claimed it since the read (PostgreSQL re-reads the row after waiting for its lock).
                let updated = try connection.execute("""
                    UPDATE play_acknowledgements SET next_attempt_at_ms = $1
                    WHERE package_name = $2 AND kind = $3 AND product_id = $4 AND purchase_token = $5 AND next_attempt_at_ms = $6
                    """, [.int(claimUntilMs), .text(pending.packageName), .text(pending.kind), .text(pending.productId),
                          .text(pending.purchaseToken), .int(pending.nextAttemptAtMs)])
                if updated == 1 { claimed.append(pending) }
            }
            return claimed
        }
    }

    /// After a failed attempt: when to ask next, and why this one failed (no token in it).
    public func reschedulePlayAcknowledgement(_ pending: PendingPlayAcknowledgement, attempts: Int, nextAttemptAtMs: Int64,
                                              lastError: String) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                UPDATE play_acknowledgements SET attempts = $1, next_attempt_at_ms = $2, last_error = $3
                WHERE package_name = $4 AND kind = $5 AND product_id = $6 AND purchase_token = $7
                """, [.int(Int64(attempts)), .int(nextAttemptAtMs), .text(lastError), .text(pending.packageName), .text(pending.kind),
                      .text(pending.productId), .text(pending.purchaseToken)])
        }
    }

    /// Taken by Google, given up (permanent error) or past its deadline.
    public func removePlayAcknowledgement(_ pending: PendingPlayAcknowledgement) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                DELETE FROM play_acknowledgements
                WHERE package_name = $1 AND kind = $2 AND product_id = $3 AND purchase_token = $4
                """, [.text(pending.packageName), .text(pending.kind), .text(pending.productId), .text(pending.purchaseToken)])
        }
    }

    /// Every queued acknowledgement, oldest due first (tests, operators).
    public func pendingPlayAcknowledgements() async throws(StoreError) -> [PendingPlayAcknowledgement] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT package_name, kind, product_id, purchase_token, deadline_ms, attempts, next_attempt_at_ms, queued_at_ms
                FROM play_acknowledgements ORDER BY next_attempt_at_ms
                """, []).compactMap(Self.pendingPlayAcknowledgement)
        }
    }

    /// How many wait, and when the oldest was queued (nil when none): the pending gauge and its age.
    public func playAcknowledgementBacklog() async throws(StoreError) -> (count: Int, oldestQueuedAtMs: Int64?) {
        try await database.read { connection throws(StoreError) in
            let row = try connection.query("SELECT COUNT(*) AS n, MIN(queued_at_ms) AS oldest FROM play_acknowledgements", []).first
            return (Int(row?.int("n") ?? 0), row?.int("oldest"))
        }
    }

    private static func pendingPlayAcknowledgement(_ row: SQLRow) -> PendingPlayAcknowledgement? {
        guard let package = row.text("package_name"), let kind = row.text("kind"), let product = row.text("product_id"),
              let token = row.text("purchase_token"), let deadline = row.int("deadline_ms"), let attempts = row.int("attempts"),
              let next = row.int("next_attempt_at_ms"), let queued = row.int("queued_at_ms") else { return nil }
        return PendingPlayAcknowledgement(packageName: package, kind: kind, productId: product, purchaseToken: token, deadlineMs: deadline,
                                          attempts: Int(attempts), nextAttemptAtMs: next, queuedAtMs: queued)
    }
}
