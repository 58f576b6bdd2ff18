import Store

/// One entitlement change on its way into the outbox.
struct OutboxEntry: Equatable {
    var entitlement: Entitlement
    var active: Bool
    var eventId: String
    var transferredFrom: String? = nil
    var transferredTo: String? = nil
}

/// The outbox of entitlement changes, written in the projection's transaction, drained by the relay.
enum OutboxRows {
    /// Queues the changes in this order (their sequences increase in it): one statement on PostgreSQL.
    static func append(_ entries: [OutboxEntry], nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        guard connection.dialect == .postgres else {
            for entry in entries { try append(entry, nowMs: nowMs, on: connection) }
            return
        }
        guard !entries.isEmpty else { return }
        let rows = entries.map(\.entitlement)
        // ORDER BY the position: the sequence is taken row by row as the rows come out.
        try connection.execute("""
            INSERT INTO entitlement_outbox (app, environment, user_id, product, source, subject, state, active, expires_at_ms,
                                            grace_expires_at_ms, changed_at_ms, event_id, transferred_from, transferred_to, quantity)
            SELECT app, environment, user_id, product, source, subject, state, active, expires_at_ms, grace_expires_at_ms,
                   $12::bigint, event_id, transferred_from, transferred_to, quantity
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[],
                        $9::bigint[], $10::bigint[], $11::text[], $13::text[], $14::text[], $15::int[]) WITH ORDINALITY
                AS t(app, environment, user_id, product, source, subject, state, active, expires_at_ms, grace_expires_at_ms,
                     event_id, transferred_from, transferred_to, quantity, ord)
            ORDER BY ord
            """, [
                .textArray(rows.map(\.app)), .textArray(rows.map(\.environment)), .textArray(rows.map(\.user)),
                .textArray(rows.map(\.product)),
                .textArray(rows.map(\.source)), .textArray(rows.map(\.subject)),
                .textArray(rows.map(\.state.rawValue)), .intArray(entries.map { $0.active ? 1 : 0 }),
                .intArray(rows.map(\.expiresAtMs)), .intArray(rows.map(\.gracePeriodExpiresAtMs)),
                .textArray(entries.map(\.eventId)), .int(nowMs),
                .textArray(entries.map(\.transferredFrom)), .textArray(entries.map(\.transferredTo)),
                .intArray(rows.map { $0.quantity.map(Int64.init) }),
            ])
    }

    static func append(_ entry: OutboxEntry, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        let e = entry.entitlement
        try connection.execute("""
            INSERT INTO entitlement_outbox (app, environment, user_id, product, source, subject, state, active, expires_at_ms,
                                            grace_expires_at_ms, changed_at_ms, event_id, transferred_from, transferred_to, quantity)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
            """, [.text(e.app), .text(e.environment), .text(e.user), .text(e.product), .text(e.source), .text(e.subject),
                  .text(e.state.rawValue),
                  .int(entry.active ? 1 : 0), .optional(e.expiresAtMs), .optional(e.gracePeriodExpiresAtMs), .int(nowMs),
                  .text(entry.eventId), .optional(entry.transferredFrom), .optional(entry.transferredTo), .optional(e.quantity.map(Int64.init))])
    }

    static func oldest(limit: Int, on connection: any SQLConnection) throws(StoreError) -> [EntitlementChange] {
        try connection.query("SELECT * FROM entitlement_outbox ORDER BY sequence LIMIT $1", [.int(Int64(limit))]).compactMap { row in
            guard let sequence = row.int("sequence"), let app = row.text("app"), let environment = row.text("environment"),
                  let user = row.text("user_id"),
                  let product = row.text("product"), let source = row.text("source"), let subject = row.text("subject"),
                  let state = row.text("state").flatMap(PurchaseState.init(rawValue:)), let active = row.bool("active"),
                  let changedAtMs = row.int("changed_at_ms"), let eventId = row.text("event_id") else { return nil }
            let entitlement = Entitlement(app: app, environment: environment, user: user, product: product, source: source, subject: subject, state: state,
                                          expiresAtMs: row.int("expires_at_ms"), gracePeriodExpiresAtMs: row.int("grace_expires_at_ms"),
                                          quantity: row.int("quantity").map { Int($0) })
            return EntitlementChange(sequence: sequence, entitlement: entitlement, active: active, changedAtMs: changedAtMs, eventId: eventId,
                                     transferredFrom: row.text("transferred_from"), transferredTo: row.text("transferred_to"))
        }
    }
}
