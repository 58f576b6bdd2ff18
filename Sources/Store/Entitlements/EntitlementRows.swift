/// One user's product in an app: the key of an entitlement and of its compacted topic record.
struct EntitlementKey: Hashable, Comparable {
    var app: String
    var user: String
    var product: String

    /// The entitlement a purchase counts towards, if it names its user and product.
    static func of(_ purchase: Purchase) -> [EntitlementKey] {
        guard let user = purchase.user, let product = purchase.product else { return [] }
        return [EntitlementKey(app: purchase.key.app, user: user, product: product)]
    }

    static func < (a: EntitlementKey, b: EntitlementKey) -> Bool {
        (a.app, a.user, a.product) < (b.app, b.user, b.product)
    }
}

/// Reading and refreshing the `entitlements` table, which holds each key's deciding purchase.
enum EntitlementRows {
    /// The first key of the PostgreSQL advisory locks that serialize refreshes of one entitlement.
    static let lockClass: Int32 = 7_461_626

    /// Recomputes one entitlement from its purchases; when it changed, saves it and queues the change.
    static func refresh(_ key: EntitlementKey, eventId: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        if connection.dialect == .postgres {
            // READ COMMITTED: another worker may be changing another purchase of this entitlement. Waiting for
            // it here makes the candidates below include its committed change; without the wait, the later
            // writer would overwrite the entitlement computed from a view that lacks it. (SQLite has one writer.)
            // The two-key form has a key space of its own, apart from the migrations' lock; two keys sharing
            // a hash only wait for each other.
            _ = try connection.query("SELECT pg_advisory_xact_lock(\(lockClass), hashtext($1))",
                                     [.text("\(key.app)/\(key.user)/\(key.product)")])
        }
        let candidates = try PurchaseRow.forEntitlement(app: key.app, user: key.user, product: key.product, on: connection)
        let stored = try load(key, on: connection)
        guard let decider = decidingPurchase(candidates, atMs: nowMs) else {
            // Its purchases moved to another user or product: it ends here.
            guard var ended = stored, ended.state != .superseded else { return }
            ended.state = .superseded
            try save(ended, nowMs: nowMs, on: connection)
            try OutboxRows.append(ended, active: false, eventId: eventId, nowMs: nowMs, on: connection)
            return
        }
        let next = Entitlement(deciding: decider, user: key.user, product: key.product)
        guard next != stored else { return }
        try save(next, nowMs: nowMs, on: connection)
        try OutboxRows.append(next, active: next.isActive(atMs: nowMs), eventId: eventId, nowMs: nowMs, on: connection)
    }

    /// The purchase that decides an entitlement: one that entitles now, the latest-expiring first;
    /// otherwise the one changed last (its state explains why there is no entitlement).
    static func decidingPurchase(_ purchases: [Purchase], atMs nowMs: Int64) -> Purchase? {
        let entitling = purchases.filter { $0.entitles(atMs: nowMs) }
        if !entitling.isEmpty {
            return entitling.max { ($0.expiresAtMs ?? .max, $0.lastEventAtMs) < ($1.expiresAtMs ?? .max, $1.lastEventAtMs) }
        }
        return purchases.max { ($0.lastEventAtMs, $0.key.subject) < ($1.lastEventAtMs, $1.key.subject) }
    }

    static func forUser(app: String, user: String, on connection: any SQLConnection) throws(StoreError) -> [Entitlement] {
        try connection.query("SELECT * FROM entitlements WHERE app = $1 AND user_id = $2 ORDER BY product",
                             [.text(app), .text(user)]).compactMap(decode)
    }

    private static func load(_ key: EntitlementKey, on connection: any SQLConnection) throws(StoreError) -> Entitlement? {
        try connection.query("SELECT * FROM entitlements WHERE app = $1 AND user_id = $2 AND product = $3",
                             [.text(key.app), .text(key.user), .text(key.product)]).first.flatMap(decode)
    }

    private static func decode(_ row: SQLRow) -> Entitlement? {
        guard let app = row.text("app"), let user = row.text("user_id"), let product = row.text("product"),
              let source = row.text("source"), let subject = row.text("subject"),
              let state = row.text("state").flatMap(PurchaseState.init(rawValue:)) else { return nil }
        return Entitlement(app: app, user: user, product: product, source: source, subject: subject, state: state,
                           expiresAtMs: row.int("expires_at_ms"), gracePeriodExpiresAtMs: row.int("grace_expires_at_ms"))
    }

    private static func save(_ e: Entitlement, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        try connection.execute("""
            INSERT INTO entitlements (app, user_id, product, source, subject, state, expires_at_ms, grace_expires_at_ms, updated_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
            ON CONFLICT (app, user_id, product) DO UPDATE SET
                source = excluded.source, subject = excluded.subject, state = excluded.state,
                expires_at_ms = excluded.expires_at_ms, grace_expires_at_ms = excluded.grace_expires_at_ms,
                updated_at_ms = excluded.updated_at_ms
            """, [.text(e.app), .text(e.user), .text(e.product), .text(e.source), .text(e.subject), .text(e.state.rawValue),
                  .optional(e.expiresAtMs), .optional(e.gracePeriodExpiresAtMs), .int(nowMs)])
    }
}

/// The outbox of entitlement changes, written in the projection's transaction, drained by the relay.
enum OutboxRows {
    static func append(_ e: Entitlement, active: Bool, eventId: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        try connection.execute("""
            INSERT INTO entitlement_outbox (app, user_id, product, source, subject, state, active, expires_at_ms,
                                            grace_expires_at_ms, changed_at_ms, event_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            """, [.text(e.app), .text(e.user), .text(e.product), .text(e.source), .text(e.subject), .text(e.state.rawValue),
                  .int(active ? 1 : 0), .optional(e.expiresAtMs), .optional(e.gracePeriodExpiresAtMs), .int(nowMs), .text(eventId)])
    }

    static func oldest(limit: Int, on connection: any SQLConnection) throws(StoreError) -> [EntitlementChange] {
        try connection.query("SELECT * FROM entitlement_outbox ORDER BY sequence LIMIT $1", [.int(Int64(limit))]).compactMap { row in
            guard let sequence = row.int("sequence"), let app = row.text("app"), let user = row.text("user_id"),
                  let product = row.text("product"), let source = row.text("source"), let subject = row.text("subject"),
                  let state = row.text("state").flatMap(PurchaseState.init(rawValue:)), let active = row.bool("active"),
                  let changedAtMs = row.int("changed_at_ms"), let eventId = row.text("event_id") else { return nil }
            let entitlement = Entitlement(app: app, user: user, product: product, source: source, subject: subject, state: state,
                                          expiresAtMs: row.int("expires_at_ms"), gracePeriodExpiresAtMs: row.int("grace_expires_at_ms"))
            return EntitlementChange(sequence: sequence, entitlement: entitlement, active: active, changedAtMs: changedAtMs, eventId: eventId)
        }
    }
}
