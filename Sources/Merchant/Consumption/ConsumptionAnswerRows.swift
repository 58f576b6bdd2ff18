import Entitlements
import Store

/// One Apple consumption request waiting for its answer (`consumption_answers`, migration 12): what the
/// answer needs of the request, and when to try next.
struct QueuedConsumptionRequest: Sendable, Equatable {
    var eventId: String
    var app: String
    /// `production` or `sandbox`: which App Store Server API endpoint takes the answer.
    var environment: String
    /// The original transaction id: the purchase in the store.
    var subject: String
    var transactionId: String
    /// Apple's request time (its signed date): the answer is due within 12 hours of it.
    var requestedAtMs: Int64
    /// The transaction's period, when it has one.
    var purchasedAtMs: Int64?
    var expiresAtMs: Int64?
    var attempts: Int = 0
    var nextAttemptAtMs: Int64 = 0
}

/// The `consumption_answers` table: written by the projection with the request's event, drained by
/// `ConsumptionAnswerer.answerDue`.
enum ConsumptionAnswerRows {
    static let columns = "event_id, app, environment, subject, transaction_id, requested_at_ms, purchased_at_ms, expires_at_ms, attempts, next_attempt_at_ms"

    /// In the projection's transaction: the request, due at once.
    static func queue(_ request: QueuedConsumptionRequest, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        _ = try connection.execute("""
            INSERT INTO consumption_answers (\(columns), queued_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $9) ON CONFLICT (event_id) DO NOTHING
            """, [.text(request.eventId), .text(request.app), .text(request.environment), .text(request.subject), .text(request.transactionId),
                  .int(request.requestedAtMs), SQLValue(request.purchasedAtMs), SQLValue(request.expiresAtMs), .int(nowMs)])
    }

    /// Up to `limit` requests due at `nowMs`, each claimed until `claimUntilMs` so another replica's job
    /// does not answer it meanwhile; returned as they were before the claim.
    static func claimDue(_ store: EntitlementStore, nowMs: Int64, claimUntilMs: Int64, limit: Int) async throws(StoreError) -> [QueuedConsumptionRequest] {
        try await store.database.transaction { connection throws(StoreError) in
            let rows = try connection.query("""
                SELECT \(columns) FROM consumption_answers WHERE next_attempt_at_ms <= $1 ORDER BY next_attempt_at_ms LIMIT $2
                """, [.int(nowMs), .int(Int64(limit))])
            var claimed: [QueuedConsumptionRequest] = []
            for row in rows {
                guard let request = QueuedConsumptionRequest(row: row) else { continue }
                // Only if no other replica claimed it since the read.
                if try connection.execute("UPDATE consumption_answers SET next_attempt_at_ms = $1 WHERE event_id = $2 AND next_attempt_at_ms = $3",
                                          [.int(claimUntilMs), .text(request.eventId), .int(request.nextAttemptAtMs)]) == 1 {
                    claimed.append(request)
                }
            }
            return claimed
        }
    }

    /// After a failed attempt that may succeed later: when to try next, and why this one failed.
    static func reschedule(_ store: EntitlementStore, eventId: String, attempts: Int, nextAttemptAtMs: Int64, lastError: String) async throws(StoreError) {
        _ = try await store.database.transaction { connection throws(StoreError) in
            try connection.execute("UPDATE consumption_answers SET attempts = $1, next_attempt_at_ms = $2, last_error = $3 WHERE event_id = $4",
                                   [.int(Int64(attempts)), .int(nextAttemptAtMs), .text(lastError), .text(eventId)])
        }
    }

    /// How many wait, and when Apple sent the oldest (nil when none): the waiting gauges.
    static func backlog(_ store: EntitlementStore) async throws(StoreError) -> (count: Int, oldestRequestedAtMs: Int64?) {
        try await store.database.read { connection throws(StoreError) in
            let row = try connection.query("SELECT COUNT(*) AS n, MIN(requested_at_ms) AS oldest FROM consumption_answers", []).first
            return (Int(row?.int("n") ?? 0), row?.int("oldest"))
        }
    }

    /// Answered, given up or past Apple's window.
    static func remove(_ store: EntitlementStore, eventId: String) async throws(StoreError) {
        _ = try await store.database.transaction { connection throws(StoreError) in
            try connection.execute("DELETE FROM consumption_answers WHERE event_id = $1", [.text(eventId)])
        }
    }
}

extension QueuedConsumptionRequest {
    init?(row: SQLRow) {
        guard let eventId = row.text("event_id"), let app = row.text("app"), let environment = row.text("environment"),
              let subject = row.text("subject"), let transactionId = row.text("transaction_id"), let requestedAtMs = row.int("requested_at_ms"),
              let attempts = row.int("attempts"), let next = row.int("next_attempt_at_ms") else { return nil }
        self.init(eventId: eventId, app: app, environment: environment, subject: subject, transactionId: transactionId,
                  requestedAtMs: requestedAtMs, purchasedAtMs: row.int("purchased_at_ms"), expiresAtMs: row.int("expires_at_ms"),
                  attempts: Int(attempts), nextAttemptAtMs: next)
    }
}
