import Entitlements
import Events
import Store

/// One row of `checkouts` (migration 6): what a user meant to pay for, and where the payment stands.
public struct CheckoutRecord: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable {
        /// Recorded, the payment started; no notification yet.
        case pending
        /// A notification with the checkout's amount and currency paid it: the user is entitled.
        case paid
        /// A refund or chargeback notification took it back: the entitlement is inactive. (A refund asked
        /// through `POST /v1/checkouts/{id}/refund` leaves it `paid`, with `refundRequestId`, until Antom's
        /// notification says the refund succeeded.)
        case refunded
        /// Unpaid after `checkouts.expirySeconds`. (A payment that does not match a checkout leaves it
        /// as it was: the payment is quarantined, `QuarantinedPayment`.)
        case expired
    }

    public var id: String
    public var app: String
    public var user: String
    public var product: String
    public var amountMinor: Int64
    public var currency: String
    public var provider: SourceName
    /// The Alipay+ client id or the Citcon account name its notifications come back under (the events' `app`).
    public var account: String
    public var reference: String
    public var environment: NormalizedEvent.Environment
    public var state: State
    public var paymentURL: String?
    public var notifyURL: String?
    public var createdAtMs: Int64
    public var expiresAtMs: Int64
    public var paidEventId: String?
    /// Antom's `paymentId`, from the notification that paid the checkout: what a refund names.
    public var paymentId: String? = nil
    /// The `refundRequestId` of the refund Tollgate asked Antom for, until it is refunded or refused.
    public var refundRequestId: String? = nil
}

extension CheckoutRecord {
    static let columns = """
        id, app, user_id, product, amount_minor, currency, provider, account, reference, environment, state,
        payment_url, notify_url, created_at_ms, expires_at_ms, paid_event_id, payment_id, refund_request_id
        """

    init?(row: SQLRow) {
        guard let id = row.text("id"), let app = row.text("app"), let user = row.text("user_id"), let product = row.text("product"),
              let amount = row.int("amount_minor"), let currency = row.text("currency"), let provider = row.text("provider"),
              let account = row.text("account"), let reference = row.text("reference"),
              let environment = row.text("environment").flatMap(NormalizedEvent.Environment.init(rawValue:)),
              let state = row.text("state").flatMap(State.init(rawValue:)),
              let created = row.int("created_at_ms"), let expires = row.int("expires_at_ms") else { return nil }
        self.init(id: id, app: app, user: user, product: product, amountMinor: amount, currency: currency, provider: SourceName(provider),
                  account: account, reference: reference, environment: environment, state: state,
                  paymentURL: row.text("payment_url"), notifyURL: row.text("notify_url"),
                  createdAtMs: created, expiresAtMs: expires, paidEventId: row.text("paid_event_id"), paymentId: row.text("payment_id"),
                  refundRequestId: row.text("refund_request_id"))
    }
}

/// The checkouts table, on the entitlement store's database.
struct CheckoutRecords: Sendable {
    let store: EntitlementStore

    private var database: SQLDatabase { store.database }

    func insert(_ c: CheckoutRecord) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                INSERT INTO checkouts (\(CheckoutRecord.columns), updated_at_ms)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $14)
                """, [.text(c.id), .text(c.app), .text(c.user), .text(c.product), .int(c.amountMinor), .text(c.currency),
                      .text(c.provider.rawValue), .text(c.account), .text(c.reference), .text(c.environment.rawValue),
                      .text(c.state.rawValue), SQLValue(c.paymentURL), SQLValue(c.notifyURL),
                      .int(c.createdAtMs), .int(c.expiresAtMs), SQLValue(c.paidEventId), SQLValue(c.paymentId),
                      SQLValue(c.refundRequestId)])
        }
    }

    /// Removes a checkout whose payment could not be started, so none is left half-made.
    func delete(id: String) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("DELETE FROM checkouts WHERE id = $1", [.text(id)])
        }
    }

    func setPaymentURL(_ url: String, id: String, nowMs: Int64) async throws(StoreError) {
        _ = try await database.transaction { connection throws(StoreError) in
            try connection.execute("UPDATE checkouts SET payment_url = $1, updated_at_ms = $2 WHERE id = $3", [.text(url), .int(nowMs), .text(id)])
        }
    }

    func find(id: String) async throws(StoreError) -> CheckoutRecord? {
        try await database.read { connection throws(StoreError) in
            try connection.query("SELECT \(CheckoutRecord.columns) FROM checkouts WHERE id = $1", [.text(id)]).first.flatMap(CheckoutRecord.init(row:))
        }
    }

    /// The checkout a provider's notification names: its account (the event's `app`) and reference (its `subject`).
    func find(provider: SourceName, account: String, reference: String) async throws(StoreError) -> CheckoutRecord? {
        try await database.read { connection throws(StoreError) in
            try connection.query("SELECT \(CheckoutRecord.columns) FROM checkouts WHERE provider = $1 AND account = $2 AND reference = $3",
                                 [.text(provider.rawValue), .text(account), .text(reference)]).first.flatMap(CheckoutRecord.init(row:))
        }
    }

    /// The checkout whose refund Antom's refund notification reports (its `refundRequestId`).
    func find(provider: SourceName, account: String, refundRequestId: String) async throws(StoreError) -> CheckoutRecord? {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT \(CheckoutRecord.columns) FROM checkouts WHERE provider = $1 AND account = $2 AND refund_request_id = $3
                """, [.text(provider.rawValue), .text(account), .text(refundRequestId)]).first.flatMap(CheckoutRecord.init(row:))
        }
    }

    /// Records the refund asked for a paid checkout before Antom is called, so a notification that
    /// overtakes Antom's answer still finds it: the request already under way if there is one (so
    /// concurrent or repeated asks send the same, Antom's idempotency key), else `proposed`; nil when the
    /// checkout is not paid. One statement decides, so no ask can revive a request a failure cleared.
    func recordRefundRequest(proposed: String, id: String, nowMs: Int64) async throws(StoreError) -> String? {
        try await database.transaction { connection throws(StoreError) in
            // Only a paid checkout can be refunded (`CheckoutStateMachine.sources(of: .refunded)`).
            try connection.query("""
                UPDATE checkouts SET refund_request_id = COALESCE(refund_request_id, $1), updated_at_ms = $2
                WHERE id = $3 AND state IN (\(CheckoutRows.sql(CheckoutStateMachine.sources(of: .refunded)))) RETURNING refund_request_id
                """, [.text(proposed), .int(nowMs), .text(id)]).first?.text("refund_request_id")
        }
    }

    /// Forgets a refund request the provider refused, so another can be asked.
    func clearRefundRequest(_ refundRequestId: String, id: String, nowMs: Int64) async throws(StoreError) {
        try await database.transaction { connection throws(StoreError) in
            try CheckoutRows.clearRefundRequest(refundRequestId, id: id, nowMs: nowMs, on: connection)
        }
    }

    /// A user's checkouts, newest first, at most `limit`: of one product, environment and state when given.
    func list(app: String, user: String, product: String?, environment: NormalizedEvent.Environment?, state: CheckoutRecord.State?,
              limit: Int) async throws(StoreError) -> [CheckoutRecord] {
        var conditions = ["app = $1", "user_id = $2"]
        var values: [SQLValue] = [.text(app), .text(user)]
        if let product { values.append(.text(product)); conditions.append("product = $\(values.count)") }
        if let environment { values.append(.text(environment.rawValue)); conditions.append("environment = $\(values.count)") }
        if let state { values.append(.text(state.rawValue)); conditions.append("state = $\(values.count)") }
        values.append(.int(Int64(limit)))
        let sql = """
            SELECT \(CheckoutRecord.columns) FROM checkouts WHERE \(conditions.joined(separator: " AND "))
            ORDER BY created_at_ms DESC, id LIMIT $\(values.count)
            """
        let parameters = values
        return try await database.read { connection throws(StoreError) in
            try connection.query(sql, parameters).compactMap(CheckoutRecord.init(row:))
        }
    }

    /// The user's checkouts of this product through this provider still waiting for their payment.
    func pending(app: String, environment: NormalizedEvent.Environment, user: String, product: String, provider: SourceName,
                 nowMs: Int64) async throws(StoreError) -> [CheckoutRecord] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT \(CheckoutRecord.columns) FROM checkouts
                WHERE app = $1 AND environment = $2 AND user_id = $3 AND product = $4 AND provider = $5 AND state = 'pending'
                  AND expires_at_ms > $6
                ORDER BY created_at_ms DESC
                """, [.text(app), .text(environment.rawValue), .text(user), .text(product), .text(provider.rawValue), .int(nowMs)])
                .compactMap(CheckoutRecord.init(row:))
        }
    }

    /// The payments quarantined against a checkout, oldest first.
    func quarantinedPayments(checkoutId: String) async throws(StoreError) -> [QuarantinedPayment] {
        try await database.read { connection throws(StoreError) in
            try connection.query("""
                SELECT \(QuarantinedPayment.columns) FROM checkout_quarantined_payments WHERE checkout_id = $1
                ORDER BY quarantined_at_ms, event_id
                """, [.text(checkoutId)]).compactMap(QuarantinedPayment.init(row:))
        }
    }

    /// Deletes up to `limit` checkouts that expired unpaid before `expiredBeforeMs` (paid and refunded
    /// ones are never deleted: they are what entitlements and refunds name); returns how many.
    func prune(expiredBeforeMs: Int64, limit: Int = 1_000) async throws(StoreError) -> Int {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                DELETE FROM checkouts WHERE id IN (
                    SELECT id FROM checkouts WHERE state = 'expired' AND expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2)
                """, [.int(expiredBeforeMs), .int(Int64(limit))])
        }
    }

    /// Marks pending checkouts whose time ran out `expired`; returns how many.
    func expire(nowMs: Int64) async throws(StoreError) -> Int {
        try await database.transaction { connection throws(StoreError) in
            try connection.execute("""
                UPDATE checkouts SET state = 'expired', updated_at_ms = $1
                WHERE state IN (\(CheckoutRows.sql(CheckoutStateMachine.sources(of: .expired)))) AND expires_at_ms <= $1
                """, [.int(nowMs)])
        }
    }
}

/// The checkout writes the projection makes in its own transaction (`CheckoutStep`), on its connection.
enum CheckoutRows {
    /// The checkout's state and refund request, locked until the transaction ends; nil when it is gone.
    static func lock(id: String, on connection: any SQLConnection) throws(StoreError) -> (state: CheckoutRecord.State, refundRequestId: String?)? {
        let lock = connection.dialect == .postgres ? " FOR UPDATE" : ""
        guard let row = try connection.query("SELECT state, refund_request_id FROM checkouts WHERE id = $1\(lock)", [.text(id)]).first,
              let state = row.text("state").flatMap(CheckoutRecord.State.init(rawValue:)) else { return nil }
        return (state, row.text("refund_request_id"))
    }

    /// Moves a checkout to `state` from one `CheckoutStateMachine` allows; true when it moved.
    static func move(id: String, to state: CheckoutRecord.State, paidEventId: String?, paymentId: String?, nowMs: Int64,
                     on connection: any SQLConnection) throws(StoreError) -> Bool {
        try connection.execute("""
            UPDATE checkouts SET state = $1, paid_event_id = COALESCE($2, paid_event_id), payment_id = COALESCE($5, payment_id),
                updated_at_ms = $3
            WHERE id = $4 AND state IN (\(sql(CheckoutStateMachine.sources(of: state))))
            """, [.text(state.rawValue), SQLValue(paidEventId), .int(nowMs), .text(id), SQLValue(paymentId)]) > 0
    }

    /// Forgets the refund request `refundRequestId` of a paid checkout.
    static func clearRefundRequest(_ refundRequestId: String, id: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) {
        _ = try connection.execute("""
            UPDATE checkouts SET refund_request_id = NULL, updated_at_ms = $1
            WHERE id = $2 AND refund_request_id = $3 AND state = 'paid'
            """, [.int(nowMs), .text(id), .text(refundRequestId)])
    }

    /// Keeps a payment that does not match its checkout (migration 11), once per notification; true when
    /// it was not kept before.
    static func quarantine(_ payment: QuarantinedPayment, on connection: any SQLConnection) throws(StoreError) -> Bool {
        try connection.execute("""
            INSERT INTO checkout_quarantined_payments (event_id, checkout_id, app, user_id, product, provider, account, reference,
                                                       reason, detail, payment_id, quarantined_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            ON CONFLICT (event_id) DO NOTHING
            """, [.text(payment.eventId), .text(payment.checkoutId), .text(payment.app), .text(payment.user), .text(payment.product),
                  .text(payment.provider.rawValue), .text(payment.account), .text(payment.reference), .text(payment.reason.rawValue),
                  .text(payment.detail), SQLValue(payment.paymentId), .int(payment.quarantinedAtMs)]) > 0
    }

    /// `'pending', 'expired'`: states as SQL literals (names of `CheckoutRecord.State`, never input).
    static func sql(_ states: [CheckoutRecord.State]) -> String {
        states.isEmpty ? "NULL" : states.map { "'\($0.rawValue)'" }.joined(separator: ", ")
    }
}

/// A provider's payment that named a checkout but does not match it (one row of
/// `checkout_quarantined_payments`, migration 11): it entitles nobody and leaves the checkout as it was,
/// so the right payment still pays it. Kept for a person to settle (refund the payer, or entitle by
/// hand), with the checkout's user and product so it stands alone once the checkout is pruned.
public struct QuarantinedPayment: Sendable, Equatable {
    /// Why a payment does not pay its checkout: the reason codes of checkout payments.
    public enum Reason: String, Sendable, CaseIterable {
        case amountMismatch = "amount_mismatch"
        case currencyMismatch = "currency_mismatch"
        case environmentMismatch = "environment_mismatch"
        case amountMissing = "amount_missing"
        /// Quarantined with the checkout before migration 11 under a reason it no longer reads.
        case unknown
    }

    public var eventId: String
    public var checkoutId: String
    public var app: String
    public var user: String
    public var product: String
    public var provider: SourceName
    public var account: String
    public var reference: String
    public var reason: Reason
    /// The reason with what was notified and expected (`amount_mismatch: notified ... micros, expected ...`).
    public var detail: String
    /// The provider's id of the payment (Citcon's transaction id, Antom's paymentId): what a refund of it names.
    public var paymentId: String?
    public var quarantinedAtMs: Int64

    static let columns = "event_id, checkout_id, app, user_id, product, provider, account, reference, reason, detail, payment_id, quarantined_at_ms"

    init(eventId: String, checkout: CheckoutRecord, reason: Reason, detail: String, paymentId: String?, quarantinedAtMs: Int64) {
        self.init(eventId: eventId, checkoutId: checkout.id, app: checkout.app, user: checkout.user, product: checkout.product,
                  provider: checkout.provider, account: checkout.account, reference: checkout.reference, reason: reason, detail: detail,
                  paymentId: paymentId, quarantinedAtMs: quarantinedAtMs)
    }

    init(eventId: String, checkoutId: String, app: String, user: String, product: String, provider: SourceName, account: String,
         reference: String, reason: Reason, detail: String, paymentId: String?, quarantinedAtMs: Int64) {
        self.eventId = eventId; self.checkoutId = checkoutId; self.app = app; self.user = user; self.product = product
        self.provider = provider; self.account = account; self.reference = reference; self.reason = reason; self.detail = detail
        self.paymentId = paymentId; self.quarantinedAtMs = quarantinedAtMs
    }

    init?(row: SQLRow) {
        guard let eventId = row.text("event_id"), let checkoutId = row.text("checkout_id"), let app = row.text("app"),
              let user = row.text("user_id"), let product = row.text("product"), let provider = row.text("provider"),
              let account = row.text("account"), let reference = row.text("reference"),
              let reason = row.text("reason").map({ Reason(rawValue: $0) ?? .unknown }), let detail = row.text("detail"),
              let at = row.int("quarantined_at_ms") else { return nil }
        self.init(eventId: eventId, checkoutId: checkoutId, app: app, user: user, product: product, provider: SourceName(provider),
                  account: account, reference: reference, reason: reason, detail: detail, paymentId: row.text("payment_id"),
                  quarantinedAtMs: at)
    }
}
