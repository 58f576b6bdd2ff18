import Store

/// What operators did in the console (`console_audit`, migration 20): who, when, which action on what,
/// and its outcome (`started` until it is known). Kept as long as the store; the same record goes to `tollgate.audit`.
public struct AuditEntry: Sendable, Equatable {
    public var sequence: Int64
    public var atMs: Int64
    public var operatorName: String
    public var action: String
    public var target: String
    public var outcome: String
    public var detail: String

    public init(sequence: Int64 = 0, atMs: Int64, operatorName: String, action: String, target: String, outcome: String, detail: String) {
        self.sequence = sequence
        self.atMs = atMs
        self.operatorName = operatorName
        self.action = action
        self.target = target
        self.outcome = outcome
        self.detail = detail
    }
}

extension EntitlementStore {
    /// Records an action before it is taken (`outcome` `started`), so a crash or a store that fails
    /// afterwards still leaves its trace; returns it with its sequence.
    public func recordAudit(_ entry: AuditEntry) async throws(StoreError) -> AuditEntry {
        try await database.transaction { connection throws(StoreError) in
            let row = try connection.query("""
                INSERT INTO console_audit (at_ms, operator, action, target, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6)
                RETURNING sequence
                """, [.int(entry.atMs), .text(entry.operatorName), .text(entry.action), .text(entry.target), .text(entry.outcome),
                      .text(entry.detail)]).first
            guard let sequence = row?.int("sequence") else { throw StoreError(.invalid, "the audit row has no sequence") }
            var recorded = entry
            recorded.sequence = sequence
            return recorded
        }
    }

    /// The outcome of an action recorded as started.
    public func completeAudit(_ entry: AuditEntry) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("UPDATE console_audit SET outcome = $1, detail = $2 WHERE sequence = $3",
                                   [.text(entry.outcome), .text(entry.detail), .int(entry.sequence)])
        }
    }

    /// The newest `limit` actions, newest first.
    public func audit(limit: Int = 200) async throws(StoreError) -> [AuditEntry] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT sequence, at_ms, operator, action, target, outcome, detail FROM console_audit ORDER BY sequence DESC LIMIT $1
                """, [.int(Int64(limit))]).compactMap { row in
                guard let sequence = row.int("sequence"), let at = row.int("at_ms"), let name = row.text("operator"),
                      let action = row.text("action"), let target = row.text("target"), let outcome = row.text("outcome"),
                      let detail = row.text("detail") else { return nil }
                return AuditEntry(sequence: sequence, atMs: at, operatorName: name, action: action, target: target, outcome: outcome, detail: detail)
            }
        }
    }
}
