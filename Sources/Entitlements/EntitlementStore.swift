import Logging
import Store
import Synchronization
import Toolkit

/// The entitlement store: purchases, the entitlements they decide, processed event ids and the outbox
/// of entitlement changes, on SQLite or PostgreSQL behind one interface.
public final class EntitlementStore: Sendable {
    public let database: SQLDatabase
    /// The purchase ids' key, read (or made) at open: every replica and restart names a purchase alike.
    public let purchaseIds: PurchaseIds
    /// Whether the calls made to the stores' APIs for each purchase are kept for the operator console
    /// (`keepStoreCalls`, by the workers when the console is on); otherwise nothing is written.
    let keepsStoreCalls = Atomic<Bool>(false)

    /// Opens the database at `url`, applies pending migrations and gives every purchase its id.
    public static func open(url: String, logger: Logger) async throws(StoreError) -> EntitlementStore {
        let database = try await SQLDatabase.open(url: url, logger: logger)
        let applied = try await database.migrate(EntitlementSchema.migrations)
        if !applied.isEmpty {
            logger.info("store migrated", metadata: ["store": .string(database.redactedURL), "versions": .string("\(applied)")])
        }
        var generator = SystemRandomNumberGenerator()
        let candidate = Digest.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let key = try await serverKey(named: PurchaseIds.keyName, candidate: candidate, database: database)
        let store = EntitlementStore(database: database, purchaseIds: PurchaseIds(key: Array(key.utf8)))
        let named = try await store.namePurchases()
        if named > 0 { logger.info("purchases given their ids", metadata: ["purchases": .stringConvertible(named)]) }
        return store
    }

    init(database: SQLDatabase, purchaseIds: PurchaseIds) {
        self.database = database
        self.purchaseIds = purchaseIds
    }

    /// Gives the purchases written before their ids were kept (migration 17, or a replica of an older
    /// version during an upgrade) their ids, 500 a transaction; returns how many.
    func namePurchases() async throws(StoreError) -> Int {
        var named = 0
        while true {
            let ids = purchaseIds
            let count = try await database.transaction { connection throws(StoreError) in
                let rows = try connection.query(
                    "SELECT source, app, environment, subject FROM purchases WHERE purchase_id IS NULL LIMIT 500", [])
                for row in rows {
                    guard let source = row.text("source"), let app = row.text("app"), let environment = row.text("environment"),
                          let subject = row.text("subject") else { continue }
                    let key = PurchaseKey(source: source, app: app, environment: environment, subject: subject)
                    try connection.execute(
                        "UPDATE purchases SET purchase_id = $1 WHERE source = $2 AND app = $3 AND environment = $4 AND subject = $5",
                        [.text(ids.id(of: key)), .text(source), .text(app), .text(environment), .text(subject)])
                }
                return rows.count
            }
            named += count
            if count < 500 { return named }
        }
    }

    /// The purchase an opaque purchase id names, or nil.
    public func purchase(id: String) async throws(StoreError) -> Purchase? {
        guard PurchaseIds.isWellFormed(id) else { return nil }
        return try await database.read { connection throws(StoreError) in
            try connection.query("SELECT \(PurchaseRow.columns) FROM purchases WHERE purchase_id = $1", [.text(id)]).first.flatMap(PurchaseRow.decode)
        }
    }

    /// Applies a batch of changes in one transaction: each event id once, each purchase updated with its
    /// entitlements, and every entitlement change queued in the outbox in the same transaction. The result
    /// is the same as applying the changes one per transaction in this order (outcomes, purchases,
    /// entitlements, and the outbox's rows with their event ids), in a handful of statements per batch.
    /// `recorder` records the applied events in the same transaction (outbound webhooks).
    public func apply(_ changes: [PurchaseChange], nowMs: Int64,
                      recorder: (any AppliedEventRecorder)? = nil) async throws(StoreError) -> [ApplyOutcome] {
        try await apply(changes, nowMs: nowMs, recorder: recorder, beforeCommit: nil)
    }

    /// The batch in one transaction; if the database refuses it for good (not a transient failure),
    /// each change alone, so one bad event cannot hold back the others. One result per change, in order.
    public func applyIsolatingRejections(_ changes: [PurchaseChange], nowMs: Int64,
                                         recorder: (any AppliedEventRecorder)? = nil) async -> [Result<ApplyOutcome, StoreError>] {
        guard !changes.isEmpty else { return [] }
        do {
            return try await apply(changes, nowMs: nowMs, recorder: recorder).map { .success($0) }
        } catch let error where error.isTransient {
            return changes.map { _ in .failure(error) }
        } catch {
            guard changes.count > 1 else { return [.failure(error)] }
            var results: [Result<ApplyOutcome, StoreError>] = []
            for change in changes { results += await applyIsolatingRejections([change], nowMs: nowMs, recorder: recorder) }
            return results
        }
    }

    /// `beforeCommit` runs on the store's thread with the batch written and not yet committed (tests hold
    /// the transaction open there).
    func apply(_ changes: [PurchaseChange], nowMs: Int64, recorder: (any AppliedEventRecorder)? = nil,
               beforeCommit: (@Sendable () -> Void)?) async throws(StoreError) -> [ApplyOutcome] {
        let ids = purchaseIds
        let (outcomes, afterCommit) = try await database.transaction { connection throws(StoreError) in
            let applied = try Self.apply(changes, nowMs: nowMs, recorder: recorder, ids: ids, on: connection)
            beforeCommit?()
            return applied
        }
        for effect in afterCommit { effect() }
        return outcomes
    }

    /// The batch in phases, each one statement on PostgreSQL (SQLite runs them row by row: there a
    /// statement is a function call, not a round trip). Also what the steps leave for after the commit.
    private static func apply(_ changes: [PurchaseChange], nowMs: Int64, recorder: (any AppliedEventRecorder)?, ids: PurchaseIds,
                              on connection: any SQLConnection) throws(StoreError) -> ([ApplyOutcome], [@Sendable () -> Void]) {
        // 1. Which events are new.
        let fresh = try ProcessedEventRows.mark(changes.map(\.eventId), nowMs: nowMs, on: connection)
        // 2. The merchant features' steps of the new ones, in order: they may hold a change back.
        var proceeding = zip(fresh, changes).map { $0 && $1.changesPurchase }
        var afterCommit: [@Sendable () -> Void] = []
        for (index, change) in changes.enumerated() where fresh[index] && !change.steps.isEmpty {
            for step in change.steps {
                let result = try step.apply(eventId: change.eventId, nowMs: nowMs, on: connection)
                if !result.proceeds { proceeding[index] = false }
                if let effect = result.afterCommit { afterCommit.append(effect) }
            }
        }
        // 3. Their purchases, locked: no other writer changes them until commit.
        let stored = try PurchaseRow.load(BatchPlan.keys(changes, fresh: proceeding), on: connection, forUpdate: true)
        // 4. The changes in order, in memory; one held back is processed, unchanged.
        let plan = BatchPlan(changes, fresh: fresh, proceeding: proceeding, stored: stored)
        let keepsHistory = changes.contains { $0.history != nil }
        guard !plan.touched.isEmpty || !plan.written.isEmpty else {
            if keepsHistory {
                try PurchaseHistoryRows.append(changes, fresh: fresh, outcomes: plan.outcomes, steps: plan.steps, applied: [], ids: ids,
                                               nowMs: nowMs, on: connection)
            }
            return (plan.outcomes, afterCommit)
        }
        // 5. The entitlements they touch: locked, then read with their candidates, then refreshed step by step.
        try EntitlementRows.lock(plan.touched, on: connection)
        var replay = EntitlementReplay(purchases: stored,
                                       candidates: try PurchaseRow.forEntitlements(plan.touched, on: connection),
                                       entitlements: try EntitlementRows.load(plan.touched, on: connection))
        replay.run(plan.steps, nowMs: nowMs)
        // 6. The final states and the changes, in bulk.
        try PurchaseRow.save(plan.written, ids: ids, nowMs: nowMs, on: connection)
        try EntitlementRows.save(replay.saved, nowMs: nowMs, on: connection)
        try OutboxRows.append(replay.outbox, nowMs: nowMs, on: connection)
        if keepsHistory {
            try PurchaseHistoryRows.append(changes, fresh: fresh, outcomes: plan.outcomes, steps: plan.steps, applied: replay.applied,
                                           ids: ids, nowMs: nowMs, on: connection)
        }
        if let recorder, !replay.applied.isEmpty,
           let effect = try recorder.record(replay.applied, nowMs: nowMs, on: connection) {
            afterCommit.append(effect)
        }
        return (plan.outcomes, afterCommit)
    }

    /// Queues `active: false` for up to `limit` entitlements whose expiry or grace period ended at or
    /// before `nowMs` with no event since (the expiry sweeper); returns how many it queued. Each is
    /// read again under its lock (the projection's), so a replica that swept it first, or an event
    /// that renewed it meanwhile, leaves nothing to queue: each end is queued once across replicas.
    public func queueExpiries(nowMs: Int64, limit: Int) async throws(StoreError) -> Int {
        // Most sweeps find nothing: they look on the read lane first, so they do not take the writer.
        let anyDue = try await database.read { connection throws(StoreError) in
            try !EntitlementRows.due(nowMs: nowMs, limit: 1, on: connection).isEmpty
        }
        guard anyDue else { return 0 }
        return try await database.transaction { connection throws(StoreError) in
            let due = try EntitlementRows.due(nowMs: nowMs, limit: limit, on: connection).sorted()
            guard !due.isEmpty else { return 0 }
            try EntitlementRows.lock(due, on: connection)
            let stored = try EntitlementRows.load(due, on: connection)
            let candidates = try PurchaseRow.forEntitlements(due, on: connection)
            // No event caused the change: it carries the id of the last event applied to the deciding purchase.
            let lastEvent = Dictionary(candidates.map { ("\($0.key.source)/\($0.key.environment)/\($0.key.subject)", $0.lastEventId) },
                                       uniquingKeysWith: { first, _ in first })
            let steps = due.map { key in
                let decider = stored[key].map { "\($0.entitlement.source)/\(key.environment)/\($0.entitlement.subject)" }
                return BatchPlan.Step(eventId: decider.flatMap { lastEvent[$0] } ?? "expiry", writes: [], touched: [key])
            }
            var replay = EntitlementReplay(purchases: [:], candidates: candidates, entitlements: stored)
            replay.run(steps, nowMs: nowMs)
            try EntitlementRows.save(replay.saved, nowMs: nowMs, on: connection)
            try OutboxRows.append(replay.outbox, nowMs: nowMs, on: connection)
            return replay.outbox.count
        }
    }

    /// The environments in which the store keeps a purchase with this source, app and subject.
    public func environments(source: String, app: String, subject: String) async throws(StoreError) -> [String] {
        try await database.read { connection throws(StoreError) in
            try connection.query("SELECT environment FROM purchases WHERE source = $1 AND app = $2 AND subject = $3 ORDER BY environment",
                                 [.text(source), .text(app), .text(subject)]).compactMap { $0.text("environment") }
        }
    }

    public func purchase(_ key: PurchaseKey) async throws(StoreError) -> Purchase? {
        try await database.read { connection throws(StoreError) in try PurchaseRow.load(key, on: connection, forUpdate: false) }
    }

    /// The user's entitlements in an app and environment (active or not, newest state of each product),
    /// or nil when the store knows no purchase of this user in this app and environment. Production
    /// unless asked: sandbox purchases never show there.
    public func entitlements(app: String, user: String, environment: String = "production") async throws(StoreError) -> [Entitlement]? {
        try await database.read { connection throws(StoreError) in
            let known = try connection.query(
                "SELECT 1 AS known FROM purchases WHERE app = $1 AND environment = $2 AND user_id = $3 LIMIT 1",
                [.text(app), .text(environment), .text(user)])
            guard !known.isEmpty else { return nil }
            return try EntitlementRows.forUser(app: app, environment: environment, user: user, on: connection)
        }
    }

    /// Every purchase the store links to the user in an app and environment, newest event first, at most `limit`.
    public func purchases(app: String, user: String, environment: String, limit: Int = 200) async throws(StoreError) -> [Purchase] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT \(PurchaseRow.columns) FROM purchases WHERE app = $1 AND environment = $2 AND user_id = $3
                ORDER BY last_event_at_ms DESC, subject LIMIT $4
                """, [.text(app), .text(environment), .text(user), .int(Int64(limit))]).compactMap(PurchaseRow.decode)
        }
    }

    /// The server key called `name`: `candidate` when none was kept yet, else the one kept first, so every
    /// replica and every restart derives with the same key.
    public func serverKey(named name: String, candidate: String) async throws(StoreError) -> String {
        try await Self.serverKey(named: name, candidate: candidate, database: database)
    }

    private static func serverKey(named name: String, candidate: String, database: SQLDatabase) async throws(StoreError) -> String {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("INSERT INTO server_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                                   [.text(name), .text(candidate)])
            guard let kept = try connection.query("SELECT secret FROM server_keys WHERE name = $1", [.text(name)]).first?.text("secret") else {
                throw StoreError(.invalid, "server key \(name) was not kept")
            }
            return kept
        }
    }

    /// Which of these events are processed (at most 100 asked at once).
    public func processed(eventIds: [String]) async throws(StoreError) -> Set<String> {
        let ids = Array(eventIds.prefix(100))
        guard !ids.isEmpty else { return [] }
        return try await database.read { connection throws(StoreError) in
            let marks = ids.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
            return Set(try connection.query("SELECT event_id FROM processed_events WHERE event_id IN (\(marks))", ids.map(SQLValue.text))
                .compactMap { $0.text("event_id") })
        }
    }

    public func hasProcessed(eventId: String) async throws(StoreError) -> Bool {
        try await database.read { connection throws(StoreError) in
            try !connection.query("SELECT 1 AS seen FROM processed_events WHERE event_id = $1", [.text(eventId)]).isEmpty
        }
    }

    // MARK: Outbox

    /// The oldest queued entitlement changes, in order.
    public func pendingChanges(limit: Int) async throws(StoreError) -> [EntitlementChange] {
        try await database.read { connection throws(StoreError) in try OutboxRows.oldest(limit: limit, on: connection) }
    }

    /// Removes exactly these published changes. Not "every sequence up to the last": on PostgreSQL a
    /// transaction may commit a lower sequence after the relay read the higher ones (sequences are
    /// taken at insert, not at commit), and that change has not been published yet.
    public func removeChanges(_ sequences: [Int64]) async throws(StoreError) {
        let runs = Self.runs(sequences)
        guard !runs.isEmpty else { return }
        _ = try await database.transaction { connection throws(StoreError) in
            for run in runs {
                try connection.execute("DELETE FROM entitlement_outbox WHERE sequence >= $1 AND sequence <= $2",
                                       [.int(run.lowerBound), .int(run.upperBound)])
            }
        }
    }

    /// The sequences as ranges of consecutive values (one, usually), so a batch is a few statements.
    static func runs(_ sequences: [Int64]) -> [ClosedRange<Int64>] {
        var runs: [ClosedRange<Int64>] = []
        for sequence in Set(sequences).sorted() {
            if let last = runs.last, last.upperBound + 1 == sequence {
                runs[runs.count - 1] = last.lowerBound...sequence
            } else {
                runs.append(sequence...sequence)
            }
        }
        return runs
    }

    /// Takes or renews a named lease for `holder` (e.g. the outbox relay, so one replica publishes and the
    /// order per key holds). True while `holder` has it.
    public func acquireLease(_ name: String, holder: String, ttlMs: Int64, nowMs: Int64) async throws(StoreError) -> Bool {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                INSERT INTO leases (name, holder, expires_at_ms) VALUES ($1, $2, $3)
                ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
                WHERE leases.holder = excluded.holder OR leases.expires_at_ms < $4
                """, [.text(name), .text(holder), .int(nowMs + ttlMs), .int(nowMs)])
            let rows = try connection.query("SELECT holder FROM leases WHERE name = $1", [.text(name)])
            return rows.first?.text("holder") == holder
        }
    }

    // MARK: Dead-letter replays

    /// How many times the dead letter at this position was replayed.
    public func replayCount(partition: Int32, offset: Int64) async throws(StoreError) -> Int {
        try await database.read { connection throws(StoreError) in
            let rows = try connection.query("SELECT replays FROM dlq_replays WHERE dlt_partition = $1 AND dlt_offset = $2",
                                            [.int(Int64(partition)), .int(offset)])
            return Int(rows.first?.int("replays") ?? 0)
        }
    }

    /// Every dead letter's replay count, by `partition:offset` (the console's list: one query, not one per letter).
    public func replayCounts() async throws(StoreError) -> [String: Int] {
        try await database.read { connection throws(StoreError) in
            var counts: [String: Int] = [:]
            for row in try connection.query("SELECT dlt_partition, dlt_offset, replays FROM dlq_replays") {
                guard let partition = row.int("dlt_partition"), let offset = row.int("dlt_offset"), let replays = row.int("replays") else { continue }
                counts["\(partition):\(offset)"] = Int(replays)
            }
            return counts
        }
    }

    /// Records one more replay of the dead letter at this position; returns the new count.
    @discardableResult
    public func recordReplay(partition: Int32, offset: Int64, eventId: String?, nowMs: Int64) async throws(StoreError) -> Int {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                INSERT INTO dlq_replays (dlt_partition, dlt_offset, event_id, replays, last_replayed_at_ms)
                VALUES ($1, $2, $3, 1, $4)
                ON CONFLICT (dlt_partition, dlt_offset) DO UPDATE SET
                    replays = dlq_replays.replays + 1, last_replayed_at_ms = excluded.last_replayed_at_ms
                """, [.int(Int64(partition)), .int(offset), .optional(eventId), .int(nowMs)])
            let rows = try connection.query("SELECT replays FROM dlq_replays WHERE dlt_partition = $1 AND dlt_offset = $2",
                                            [.int(Int64(partition)), .int(offset)])
            return Int(rows.first?.int("replays") ?? 0)
        }
    }

    public func ping() async -> Bool { await database.ping() }
    public func close() async { await database.close() }
}
