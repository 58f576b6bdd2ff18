import Store

/// The app account tokens Tollgate made, each with its user (`app_account_tokens`, migration 19): an Apple
/// notification names a purchase's owner by the token, and the projection reads the user here. Only made
/// tokens are kept (a user id that is a UUID is its own token, with no row); a token is a MAC of its app
/// and user, so no other user can hold it.
extension EntitlementStore {
    /// The user behind `token` (as kept: lower case) in `app`; nil for a token Tollgate did not make.
    public func user(forAppAccountToken token: String, app: String) async throws(StoreError) -> String? {
        try await database.read { connection throws(StoreError) in
            try connection.query("SELECT user_id FROM app_account_tokens WHERE app = $1 AND token = $2",
                                 [.text(app), .text(token)]).first?.text("user_id")
        }
    }

    /// The stored purchase and, when asked, the user whose token Apple took for it, in one read: what a
    /// purchase reported with no account token needs before it is published, one trip to the store.
    public func purchaseAndTokenHolder(_ key: PurchaseKey, tokenHolder: Bool) async throws(StoreError) -> (purchase: Purchase?, tokenHolder: String?) {
        try await database.read { connection throws(StoreError) in
            let purchase = try PurchaseRow.load(key, on: connection, forUpdate: false)
            guard tokenHolder else { return (purchase, nil) }
            return (purchase, try Self.tokenHolder(app: key.app, environment: key.environment, originalTransactionId: key.subject, on: connection))
        }
    }

    /// The user whose token Apple took for this purchase (the last call that succeeded), if any: a signed copy
    /// from before the token names no owner, and must not take the purchase from that user.
    public func appAccountTokenHolder(app: String, environment: String, originalTransactionId: String) async throws(StoreError) -> String? {
        try await database.read { connection throws(StoreError) in
            try Self.tokenHolder(app: app, environment: environment, originalTransactionId: originalTransactionId, on: connection)
        }
    }

    private static func tokenHolder(app: String, environment: String, originalTransactionId: String,
                                    on connection: any SQLConnection) throws(StoreError) -> String? {
        try connection.query("""
            SELECT user_id FROM app_account_token_requests
            WHERE app = $1 AND environment = $2 AND original_transaction_id = $3 AND outcome = 'set'
            """, [.text(app), .text(environment), .text(originalTransactionId)]).first?.text("user_id")
    }

    /// Queues Set App Account Token for the purchase, due at once, unless this token was queued for it
    /// already (made or not: a purchase moved to another user gets the new user's token). A made token is
    /// kept with its user at once (it is a MAC of that user: no other can hold it), so a notification
    /// naming it before the call's answer is already that user's.
    public func queueAppAccountToken(app: String, environment: String, originalTransactionId: String, token: String, user: String,
                                     nowMs: Int64) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            if token != user {
                try connection.execute("""
                    INSERT INTO app_account_tokens (app, token, user_id, created_at_ms) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (app, token) DO NOTHING
                    """, [.text(app), .text(token), .text(user), .int(nowMs)])
            }
            try connection.execute("""
                INSERT INTO app_account_token_requests (app, environment, original_transaction_id, token, user_id, attempts,
                                                        next_attempt_at_ms, queued_at_ms)
                VALUES ($1, $2, $3, $4, $5, 0, $6, $6)
                ON CONFLICT (app, environment, original_transaction_id) DO UPDATE SET token = excluded.token, user_id = excluded.user_id,
                    attempts = 0, next_attempt_at_ms = excluded.next_attempt_at_ms, outcome = NULL, last_error = NULL
                WHERE app_account_token_requests.token <> excluded.token
                """, [.text(app), .text(environment), .text(originalTransactionId), .text(token), .text(user), .int(nowMs)])
        }
    }
}

/// One Set App Account Token call still to make.
public struct AppAccountTokenRequest: Sendable, Equatable {
    public var app: String
    public var environment: String
    public var originalTransactionId: String
    public var token: String
    public var user: String
    public var attempts: Int
    public var nextAttemptAtMs: Int64
    public var queuedAtMs: Int64
}

extension EntitlementStore {
    /// Up to `limit` calls due at `nowMs`, each claimed until `claimUntilMs` (another replica leaves it alone meanwhile).
    public func claimAppAccountTokenRequests(nowMs: Int64, claimUntilMs: Int64, limit: Int) async throws(StoreError) -> [AppAccountTokenRequest] {
        try await database.transaction { connection throws(StoreError) in
            let rows = try connection.query("""
                SELECT app, environment, original_transaction_id, token, user_id, attempts, next_attempt_at_ms, queued_at_ms
                FROM app_account_token_requests WHERE outcome IS NULL AND next_attempt_at_ms <= $1 ORDER BY next_attempt_at_ms LIMIT $2
                """, [.int(nowMs), .int(Int64(limit))])
            var claimed: [AppAccountTokenRequest] = []
            for row in rows {
                guard let app = row.text("app"), let environment = row.text("environment"), let original = row.text("original_transaction_id"),
                      let token = row.text("token"), let user = row.text("user_id"), let attempts = row.int("attempts"), let next = row.int("next_attempt_at_ms"),
                      let queued = row.int("queued_at_ms") else { continue }
                if try connection.execute("""
                    UPDATE app_account_token_requests SET next_attempt_at_ms = $1
                    WHERE app = $2 AND environment = $3 AND original_transaction_id = $4 AND next_attempt_at_ms = $5
                    """, [.int(claimUntilMs), .text(app), .text(environment), .text(original), .int(next)]) == 1 {
                    claimed.append(AppAccountTokenRequest(app: app, environment: environment, originalTransactionId: original, token: token,
                                                          user: user, attempts: Int(attempts), nextAttemptAtMs: next, queuedAtMs: queued))
                }
            }
            return claimed
        }
    }

    /// Made (`set`: Apple took the token) or given up (`failed`): kept with its outcome, so the same token is
    /// not queued again; a newer call for another token that replaced it meanwhile stays queued.
    public func finishAppAccountTokenRequest(_ request: AppAccountTokenRequest, outcome: String) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                UPDATE app_account_token_requests SET outcome = $1
                WHERE app = $2 AND environment = $3 AND original_transaction_id = $4 AND token = $5
                """, [.text(outcome), .text(request.app), .text(request.environment), .text(request.originalTransactionId), .text(request.token)])
        }
    }

    public func rescheduleAppAccountTokenRequest(_ request: AppAccountTokenRequest, attempts: Int, nextAttemptAtMs: Int64,
                                                 lastError: String) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                UPDATE app_account_token_requests SET attempts = $1, next_attempt_at_ms = $2, last_error = $3
                WHERE app = $4 AND environment = $5 AND original_transaction_id = $6 AND token = $7
                """, [.int(Int64(attempts)), .int(nextAttemptAtMs), .text(lastError), .text(request.app), .text(request.environment),
                      .text(request.originalTransactionId), .text(request.token)])
        }
    }

    /// How many calls wait.
    public func appAccountTokenRequestsWaiting() async throws(StoreError) -> Int {
        try await database.read { connection throws(StoreError) in
            Int(try connection.query("SELECT COUNT(*) AS n FROM app_account_token_requests WHERE outcome IS NULL", []).first?.int("n") ?? 0)
        }
    }
}
