import Entitlements
import Store

/// One Google refund review waiting for its answer (`refund_reviews`, migration 18).
struct QueuedRefundReview: Sendable, Equatable {
    var eventId: String
    var app: String
    var environment: String
    var orderId: String
    var pendingRefundToken: String
    /// When the notification arrived; Google takes the answer until `deadlineMs`, 24 hours later.
    var requestedAtMs: Int64
    var deadlineMs: Int64
    var attempts: Int = 0
    var nextAttemptAtMs: Int64 = 0
}

/// The `refund_reviews` table: written by the projection with the review's event, drained by
/// `RefundReviewAnswerer.answerDue`.
enum RefundReviewRows {
    static let columns = "event_id, app, environment, order_id, pending_refund_token, requested_at_ms, deadline_ms, attempts, next_attempt_at_ms"

    /// In the projection's transaction: the review, due at once; not when one for the same order waits
    /// already (Google records the first answer to an order's review: a second would only spend quota).
    static func queue(_ review: QueuedRefundReview, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        _ = try connection.execute("""
            INSERT INTO refund_reviews (\(columns), queued_at_ms)
            SELECT $1, $2, $3, $4, $5, $6, $7, 0, $8, $8
            WHERE NOT EXISTS (SELECT 1 FROM refund_reviews WHERE app = $2 AND order_id = $4)
            ON CONFLICT (event_id) DO NOTHING
            """, [.text(review.eventId), .text(review.app), .text(review.environment), .text(review.orderId), .text(review.pendingRefundToken),
                  .int(review.requestedAtMs), .int(review.deadlineMs), .int(nowMs)])
    }

    /// Up to `limit` reviews due at `nowMs`, each claimed until `claimUntilMs` so another replica's job
    /// leaves it alone meanwhile; returned as they were before the claim.
    static func claimDue(_ store: EntitlementStore, nowMs: Int64, claimUntilMs: Int64, limit: Int) async throws(StoreError) -> [QueuedRefundReview] {
        try await store.database.transaction { connection throws(StoreError) in
            // The nearest deadline first: a flood of reviews never holds back one about to expire.
            let rows = try connection.query("SELECT \(columns) FROM refund_reviews WHERE next_attempt_at_ms <= $1 ORDER BY deadline_ms LIMIT $2",
                                            [.int(nowMs), .int(Int64(limit))])
            var claimed: [QueuedRefundReview] = []
            for row in rows {
                guard let review = QueuedRefundReview(row: row) else { continue }
                if try connection.execute("UPDATE refund_reviews SET next_attempt_at_ms = $1 WHERE event_id = $2 AND next_attempt_at_ms = $3",
                                          [.int(claimUntilMs), .text(review.eventId), .int(review.nextAttemptAtMs)]) == 1 {
                    claimed.append(review)
                }
            }
            return claimed
        }
    }

    static func reschedule(_ store: EntitlementStore, eventId: String, attempts: Int, nextAttemptAtMs: Int64, lastError: String) async throws(StoreError) {
        _ = try await store.database.transaction { connection throws(StoreError) in
            try connection.execute("UPDATE refund_reviews SET attempts = $1, next_attempt_at_ms = $2, last_error = $3 WHERE event_id = $4",
                                   [.int(Int64(attempts)), .int(nextAttemptAtMs), .text(lastError), .text(eventId)])
        }
    }

    /// How many wait, and the earliest deadline among them (nil when none): the waiting gauges.
    static func backlog(_ store: EntitlementStore) async throws(StoreError) -> (count: Int, earliestDeadlineMs: Int64?, oldestRequestedAtMs: Int64?) {
        try await store.database.read { connection throws(StoreError) in
            let row = try connection.query(
                "SELECT COUNT(*) AS n, MIN(deadline_ms) AS deadline, MIN(requested_at_ms) AS oldest FROM refund_reviews", []).first
            return (Int(row?.int("n") ?? 0), row?.int("deadline"), row?.int("oldest"))
        }
    }

    static func remove(_ store: EntitlementStore, eventId: String) async throws(StoreError) {
        _ = try await store.database.transaction { connection throws(StoreError) in
            try connection.execute("DELETE FROM refund_reviews WHERE event_id = $1", [.text(eventId)])
        }
    }
}

extension QueuedRefundReview {
    init?(row: SQLRow) {
        guard let eventId = row.text("event_id"), let app = row.text("app"), let environment = row.text("environment"),
              let orderId = row.text("order_id"), let token = row.text("pending_refund_token"), let requestedAtMs = row.int("requested_at_ms"),
              let deadlineMs = row.int("deadline_ms"), let attempts = row.int("attempts"), let next = row.int("next_attempt_at_ms") else { return nil }
        self.init(eventId: eventId, app: app, environment: environment, orderId: orderId, pendingRefundToken: token,
                  requestedAtMs: requestedAtMs, deadlineMs: deadlineMs, attempts: Int(attempts), nextAttemptAtMs: next)
    }
}
