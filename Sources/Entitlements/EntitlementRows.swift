import Store

/// An entitlement as stored, with whether the last change queued for it was active.
struct EntitlementRow: Equatable {
    var entitlement: Entitlement
    var active: Bool

    /// When it stops entitling unless an event changes it: nil when it is not active or has no end
    /// (a one-time purchase). The expiry sweeper looks for the rows whose time has come.
    var activeUntilMs: Int64? {
        guard active else { return nil }
        return entitlement.state == .gracePeriod
            ? entitlement.gracePeriodExpiresAtMs ?? entitlement.expiresAtMs : entitlement.expiresAtMs
    }
}

/// Reading, locking and writing the `entitlements` table, which holds each key's deciding purchase.
enum EntitlementRows {
    /// The first key of the PostgreSQL advisory locks that serialize refreshes of one entitlement.
    static let lockClass: Int32 = 7_461_626

    /// PostgreSQL: waits for every other transaction refreshing one of these entitlements.
    /// READ COMMITTED: another worker may be changing another purchase of such an entitlement. Waiting
    /// for it makes the candidates read afterwards include its committed change; without the wait, the
    /// later writer would overwrite the entitlement computed from a view that lacks it. (SQLite has one
    /// writer.) The keys are locked in sorted order, so two batches sharing keys cannot deadlock on them.
    /// The two-key form has a key space of its own, apart from the migrations' lock; two keys sharing a
    /// hash only wait for each other.
    static func lock(_ keys: [EntitlementKey], on connection: any SQLConnection) throws(StoreError) {
        guard connection.dialect == .postgres, !keys.isEmpty else { return }
        let names = keys.sorted().map { Optional("\($0.app)/\($0.environment)/\($0.user)/\($0.product)") }
        _ = try connection.query("""
            SELECT pg_advisory_xact_lock(\(lockClass), hashtext(name))
            FROM unnest($1::text[]) WITH ORDINALITY AS t(name, ord) ORDER BY ord
            """, [.textArray(names)])
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

    static func forUser(app: String, environment: String, user: String, on connection: any SQLConnection) throws(StoreError) -> [Entitlement] {
        try connection.query("SELECT * FROM entitlements WHERE app = $1 AND environment = $2 AND user_id = $3 ORDER BY product",
                             [.text(app), .text(environment), .text(user)]).compactMap(decode).map(\.entitlement)
    }

    /// The stored entitlements with these keys: one statement on PostgreSQL.
    static func load(_ keys: [EntitlementKey], on connection: any SQLConnection) throws(StoreError) -> [EntitlementKey: EntitlementRow] {
        var rows: [SQLRow] = []
        if connection.dialect == .postgres {
            guard !keys.isEmpty else { return [:] }
            rows = try connection.query("""
                SELECT * FROM entitlements
                WHERE (app, environment, user_id, product) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]))
                """, EntitlementKey.arrays(keys))
        } else {
            for key in keys {
                rows += try connection.query("SELECT * FROM entitlements WHERE app = $1 AND environment = $2 AND user_id = $3 AND product = $4",
                                             [.text(key.app), .text(key.environment), .text(key.user), .text(key.product)])
            }
        }
        var found: [EntitlementKey: EntitlementRow] = [:]
        for row in rows.compactMap(decode) {
            found[row.entitlement.key] = row
        }
        return found
    }

    /// Up to `limit` entitlements last published active whose end is at or before `nowMs`, the
    /// earliest first: the ones time alone has ended.
    static func due(nowMs: Int64, limit: Int, on connection: any SQLConnection) throws(StoreError) -> [EntitlementKey] {
        try connection.query("""
            SELECT app, environment, user_id, product FROM entitlements WHERE active_until_ms <= $1
            ORDER BY active_until_ms LIMIT $2
            """, [.int(nowMs), .int(Int64(limit))]).compactMap { row in
            guard let app = row.text("app"), let environment = row.text("environment"), let user = row.text("user_id"),
                  let product = row.text("product") else { return nil }
            return EntitlementKey(app: app, environment: environment, user: user, product: product)
        }
    }

    private static func decode(_ row: SQLRow) -> EntitlementRow? {
        guard let app = row.text("app"), let environment = row.text("environment"), let user = row.text("user_id"),
              let product = row.text("product"), let source = row.text("source"), let subject = row.text("subject"),
              let state = row.text("state").flatMap(PurchaseState.init(rawValue:)) else { return nil }
        let entitlement = Entitlement(app: app, environment: environment, user: user, product: product, source: source, subject: subject,
                                      state: state, expiresAtMs: row.int("expires_at_ms"), gracePeriodExpiresAtMs: row.int("grace_expires_at_ms"),
                                      quantity: row.int("quantity").map { Int($0) })
        return EntitlementRow(entitlement: entitlement, active: row.bool("active") ?? false)
    }

    private static let upsert = """
        ON CONFLICT (app, environment, user_id, product) DO UPDATE SET
            source = excluded.source, subject = excluded.subject, state = excluded.state,
            expires_at_ms = excluded.expires_at_ms, grace_expires_at_ms = excluded.grace_expires_at_ms,
            active = excluded.active, active_until_ms = excluded.active_until_ms, quantity = excluded.quantity,
            updated_at_ms = excluded.updated_at_ms
        """

    /// Saves each entitlement (at most one per key): one statement on PostgreSQL.
    static func save(_ rows: [EntitlementRow], nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        guard connection.dialect == .postgres else {
            for row in rows {
                let e = row.entitlement
                try connection.execute("""
                    INSERT INTO entitlements (app, environment, user_id, product, source, subject, state, expires_at_ms,
                                              grace_expires_at_ms, active, active_until_ms, updated_at_ms, quantity)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                    \(upsert)
                    """, [.text(e.app), .text(e.environment), .text(e.user), .text(e.product), .text(e.source), .text(e.subject),
                          .text(e.state.rawValue), .optional(e.expiresAtMs), .optional(e.gracePeriodExpiresAtMs),
                          .int(row.active ? 1 : 0), .optional(row.activeUntilMs), .int(nowMs), .optional(e.quantity.map(Int64.init))])
            }
            return
        }
        guard !rows.isEmpty else { return }
        let entitlements = rows.map(\.entitlement)
        try connection.execute("""
            INSERT INTO entitlements (app, environment, user_id, product, source, subject, state, expires_at_ms,
                                      grace_expires_at_ms, active, active_until_ms, updated_at_ms, quantity)
            SELECT app, environment, user_id, product, source, subject, state, expires_at_ms, grace_expires_at_ms, active,
                   active_until_ms, $12::bigint, quantity
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                        $8::bigint[], $9::bigint[], $10::int[], $11::bigint[], $13::int[])
                AS t(app, environment, user_id, product, source, subject, state, expires_at_ms, grace_expires_at_ms, active,
                     active_until_ms, quantity)
            \(upsert)
            """, [
                .textArray(entitlements.map(\.app)), .textArray(entitlements.map(\.environment)), .textArray(entitlements.map(\.user)),
                .textArray(entitlements.map(\.product)), .textArray(entitlements.map(\.source)),
                .textArray(entitlements.map(\.subject)), .textArray(entitlements.map(\.state.rawValue)),
                .intArray(entitlements.map(\.expiresAtMs)), .intArray(entitlements.map(\.gracePeriodExpiresAtMs)),
                .intArray(rows.map { $0.active ? 1 : 0 }), .intArray(rows.map(\.activeUntilMs)),
                .int(nowMs), .intArray(entitlements.map { $0.quantity.map(Int64.init) }),
            ])
    }
}
