import Store

/// Reading and writing `purchases` rows.
enum PurchaseRow {
    static let columns = """
        source, app, subject, kind, state, user_id, product, environment, expires_at_ms, grace_expires_at_ms, \
        auto_renew, superseded_by, last_event_at_ms, last_event_id, last_event_type, quantity, app_transaction_id
        """

    static func decode(_ row: SQLRow) -> Purchase? {
        guard let source = row.text("source"), let app = row.text("app"), let subject = row.text("subject"),
              let kind = row.text("kind").flatMap(Purchase.Kind.init(rawValue:)),
              let state = row.text("state").flatMap(PurchaseState.init(rawValue:)),
              let environment = row.text("environment"), let lastEventAtMs = row.int("last_event_at_ms"),
              let lastEventId = row.text("last_event_id"), let lastEventType = row.text("last_event_type")
        else { return nil }
        var purchase = Purchase(
            key: PurchaseKey(source: source, app: app, environment: environment, subject: subject), kind: kind, state: state,
            user: row.text("user_id"), product: row.text("product"),
            expiresAtMs: row.int("expires_at_ms"), gracePeriodExpiresAtMs: row.int("grace_expires_at_ms"),
            autoRenew: row.bool("auto_renew"), quantity: row.int("quantity").map { Int($0) }, supersededBy: row.text("superseded_by"),
            lastEventAtMs: lastEventAtMs, lastEventId: lastEventId, lastEventType: lastEventType)
        purchase.appTransactionId = row.text("app_transaction_id")
        return purchase
    }

    static func load(_ key: PurchaseKey, on connection: any SQLConnection, forUpdate: Bool) throws(StoreError) -> Purchase? {
        let lock = forUpdate && connection.dialect == .postgres ? " FOR UPDATE" : ""
        let rows = try connection.query(
            "SELECT \(columns) FROM purchases WHERE source = $1 AND app = $2 AND environment = $3 AND subject = $4\(lock)",
            [.text(key.source), .text(key.app), .text(key.environment), .text(key.subject)])
        guard let row = rows.first else { return nil }
        guard let purchase = decode(row) else {
            throw StoreError(.invalid, "purchase \(key) has a row this version cannot read")
        }
        return purchase
    }

    /// The stored purchases with these keys (missing ones absent), locked on PostgreSQL when
    /// `forUpdate`; in one statement there, in key order so two writers lock alike.
    static func load(_ keys: [PurchaseKey], on connection: any SQLConnection, forUpdate: Bool) throws(StoreError) -> [PurchaseKey: Purchase] {
        var found: [PurchaseKey: Purchase] = [:]
        guard connection.dialect == .postgres else {
            for key in keys {
                if let purchase = try load(key, on: connection, forUpdate: forUpdate) { found[key] = purchase }
            }
            return found
        }
        guard !keys.isEmpty else { return found }
        let lock = forUpdate ? " FOR UPDATE" : ""
        let rows = try connection.query("""
            SELECT \(columns) FROM purchases
            WHERE (source, app, environment, subject) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]))
            ORDER BY source, app, environment, subject\(lock)
            """, [.textArray(keys.map(\.source)), .textArray(keys.map(\.app)), .textArray(keys.map(\.environment)),
                  .textArray(keys.map(\.subject))])
        for row in rows {
            guard let purchase = decode(row) else {
                let key = "\(row.text("source") ?? "?")/\(row.text("app") ?? "?")/\(row.text("environment") ?? "?")/\(row.text("subject") ?? "?")"
                throw StoreError(.invalid, "purchase \(key) has a row this version cannot read")
            }
            found[purchase.key] = purchase
        }
        return found
    }

    static func save(_ p: Purchase, ids: PurchaseIds, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        try connection.execute("""
            INSERT INTO purchases (\(columns), updated_at_ms, purchase_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
            \(upsert)
            """, [
                .text(p.key.source), .text(p.key.app), .text(p.key.subject), .text(p.kind.rawValue), .text(p.state.rawValue),
                .optional(p.user), .optional(p.product), .text(p.environment), .optional(p.expiresAtMs),
                .optional(p.gracePeriodExpiresAtMs), .optional(p.autoRenew.map { $0 ? Int64(1) : 0 }), .optional(p.supersededBy),
                .int(p.lastEventAtMs), .text(p.lastEventId), .text(p.lastEventType), .optional(p.quantity.map(Int64.init)),
                .optional(p.appTransactionId), .int(nowMs), .text(ids.id(of: p.key)),
            ])
    }

    /// Saves each purchase (at most one per key): one statement on PostgreSQL.
    static func save(_ purchases: [Purchase], ids: PurchaseIds, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        guard connection.dialect == .postgres else {
            for purchase in purchases { try save(purchase, ids: ids, nowMs: nowMs, on: connection) }
            return
        }
        guard !purchases.isEmpty else { return }
        try connection.execute("""
            INSERT INTO purchases (\(columns), updated_at_ms, purchase_id)
            SELECT p.source, p.app, p.subject, p.kind, p.state, p.user_id, p.product, p.environment, p.expires_at_ms,
                   p.grace_expires_at_ms, p.auto_renew, p.superseded_by, p.last_event_at_ms, p.last_event_id, p.last_event_type,
                   p.quantity, p.app_transaction_id, $16::bigint, p.purchase_id
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                        $8::text[], $9::bigint[], $10::bigint[], $11::int[], $12::text[], $13::bigint[],
                        $14::text[], $15::text[], $17::int[], $18::text[], $19::text[])
                 AS p(source, app, subject, kind, state, user_id, product, environment, expires_at_ms, grace_expires_at_ms,
                      auto_renew, superseded_by, last_event_at_ms, last_event_id, last_event_type, quantity, app_transaction_id,
                      purchase_id)
            \(upsert)
            """, [
                .textArray(purchases.map(\.key.source)), .textArray(purchases.map(\.key.app)),
                .textArray(purchases.map(\.key.subject)), .textArray(purchases.map(\.kind.rawValue)),
                .textArray(purchases.map(\.state.rawValue)), .textArray(purchases.map(\.user)),
                .textArray(purchases.map(\.product)), .textArray(purchases.map(\.environment)),
                .intArray(purchases.map(\.expiresAtMs)), .intArray(purchases.map(\.gracePeriodExpiresAtMs)),
                .intArray(purchases.map { $0.autoRenew.map { $0 ? 1 : 0 } }), .textArray(purchases.map(\.supersededBy)),
                .intArray(purchases.map(\.lastEventAtMs)), .textArray(purchases.map(\.lastEventId)),
                .textArray(purchases.map(\.lastEventType)), .int(nowMs), .intArray(purchases.map { $0.quantity.map(Int64.init) }),
                .textArray(purchases.map(\.appTransactionId)), .textArray(purchases.map { ids.id(of: $0.key) }),
            ])
    }

    private static let upsert = """
        ON CONFLICT (source, app, environment, subject) DO UPDATE SET
            kind = excluded.kind, state = excluded.state, user_id = excluded.user_id, product = excluded.product,
            expires_at_ms = excluded.expires_at_ms,
            grace_expires_at_ms = excluded.grace_expires_at_ms, auto_renew = excluded.auto_renew,
            superseded_by = excluded.superseded_by, purchase_id = excluded.purchase_id, quantity = excluded.quantity, app_transaction_id = excluded.app_transaction_id,
            last_event_at_ms = excluded.last_event_at_ms,
            last_event_id = excluded.last_event_id, last_event_type = excluded.last_event_type,
            updated_at_ms = excluded.updated_at_ms
        """

    /// Every purchase of one user's product in an app and environment: the candidates for its entitlement.
    static func forEntitlement(_ key: EntitlementKey, on connection: any SQLConnection) throws(StoreError) -> [Purchase] {
        try connection.query(
            "SELECT \(columns) FROM purchases WHERE app = $1 AND environment = $2 AND user_id = $3 AND product = $4",
            [.text(key.app), .text(key.environment), .text(key.user), .text(key.product)]).compactMap(decode)
    }

    /// The candidates of all these entitlements: one statement on PostgreSQL.
    static func forEntitlements(_ keys: [EntitlementKey], on connection: any SQLConnection) throws(StoreError) -> [Purchase] {
        guard connection.dialect == .postgres else {
            var purchases: [Purchase] = []
            for key in keys { purchases += try forEntitlement(key, on: connection) }
            return purchases
        }
        guard !keys.isEmpty else { return [] }
        return try connection.query("""
            SELECT \(columns) FROM purchases
            WHERE (app, environment, user_id, product) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]))
            """, EntitlementKey.arrays(keys)).compactMap(decode)
    }
}

extension SQLValue {
    static func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }
    static func optional(_ number: Int64?) -> SQLValue { number.map(SQLValue.int) ?? .null }
}
