/// Reading and writing `purchases` rows.
enum PurchaseRow {
    static let columns = """
        source, app, subject, kind, state, user_id, product, environment, expires_at_ms, grace_expires_at_ms, \
        auto_renew, superseded_by, last_event_at_ms, last_event_id, last_event_type
        """

    static func decode(_ row: SQLRow) -> Purchase? {
        guard let source = row.text("source"), let app = row.text("app"), let subject = row.text("subject"),
              let kind = row.text("kind").flatMap(Purchase.Kind.init(rawValue:)),
              let state = row.text("state").flatMap(PurchaseState.init(rawValue:)),
              let environment = row.text("environment"), let lastEventAtMs = row.int("last_event_at_ms"),
              let lastEventId = row.text("last_event_id"), let lastEventType = row.text("last_event_type")
        else { return nil }
        return Purchase(
            key: PurchaseKey(source: source, app: app, subject: subject), kind: kind, state: state,
            user: row.text("user_id"), product: row.text("product"), environment: environment,
            expiresAtMs: row.int("expires_at_ms"), gracePeriodExpiresAtMs: row.int("grace_expires_at_ms"),
            autoRenew: row.bool("auto_renew"), supersededBy: row.text("superseded_by"),
            lastEventAtMs: lastEventAtMs, lastEventId: lastEventId, lastEventType: lastEventType)
    }

    static func load(_ key: PurchaseKey, on connection: any SQLConnection, forUpdate: Bool) throws(StoreError) -> Purchase? {
        let lock = forUpdate && connection.dialect == .postgres ? " FOR UPDATE" : ""
        let rows = try connection.query(
            "SELECT \(columns) FROM purchases WHERE source = $1 AND app = $2 AND subject = $3\(lock)",
            [.text(key.source), .text(key.app), .text(key.subject)])
        guard let row = rows.first else { return nil }
        guard let purchase = decode(row) else {
            throw StoreError(.invalid, "purchase \(key) has a row this version cannot read")
        }
        return purchase
    }

    static func save(_ p: Purchase, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        try connection.execute("""
            INSERT INTO purchases (\(columns), updated_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
            ON CONFLICT (source, app, subject) DO UPDATE SET
                kind = excluded.kind, state = excluded.state, user_id = excluded.user_id, product = excluded.product,
                environment = excluded.environment, expires_at_ms = excluded.expires_at_ms,
                grace_expires_at_ms = excluded.grace_expires_at_ms, auto_renew = excluded.auto_renew,
                superseded_by = excluded.superseded_by, last_event_at_ms = excluded.last_event_at_ms,
                last_event_id = excluded.last_event_id, last_event_type = excluded.last_event_type,
                updated_at_ms = excluded.updated_at_ms
            """, [
                .text(p.key.source), .text(p.key.app), .text(p.key.subject), .text(p.kind.rawValue), .text(p.state.rawValue),
                .optional(p.user), .optional(p.product), .text(p.environment), .optional(p.expiresAtMs),
                .optional(p.gracePeriodExpiresAtMs), .optional(p.autoRenew.map { $0 ? Int64(1) : 0 }), .optional(p.supersededBy),
                .int(p.lastEventAtMs), .text(p.lastEventId), .text(p.lastEventType), .int(nowMs),
            ])
    }

    /// Every purchase of one user's product in an app: the candidates for its entitlement.
    static func forEntitlement(app: String, user: String, product: String, on connection: any SQLConnection) throws(StoreError) -> [Purchase] {
        try connection.query(
            "SELECT \(columns) FROM purchases WHERE app = $1 AND user_id = $2 AND product = $3",
            [.text(app), .text(user), .text(product)]).compactMap(decode)
    }
}

extension SQLValue {
    static func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }
    static func optional(_ number: Int64?) -> SQLValue { number.map(SQLValue.int) ?? .null }
}
