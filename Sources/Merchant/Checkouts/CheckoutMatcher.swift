import Entitlements
import Events
import Logging
import Store
import Verifiers

/// Gives a checkout provider's event (`CheckoutProviders`: Alipay+ / Antom, Citcon) the user and
/// product of the checkout its reference names (the event's `subject`, under the same provider and
/// account, the event's `app`), as the projection prepares it (docs/checkouts.md). It only reads: what
/// the notification does to the checkout is a `CheckoutStep`, decided by `CheckoutStateMachine` and
/// written in the projection's transaction with the event's purchase change, so the checkout and the
/// entitlement move together or not at all:
/// - a completed payment whose signed amount and currency (and environment) are the checkout's pays
///   it: the checkout becomes `paid` and the event entitles its user to its product, even when the
///   checkout had expired (the money was taken; counted as `paid_after_expiry`);
/// - one that differs is a quarantined payment: kept with its reason (`checkout_quarantined_payments`),
///   counted and logged, and the event entitles nobody (it is processed, unchanged: a replay would only
///   quarantine it again). The checkout stays as it was, so whoever knows a reference cannot lock the
///   owner's checkout with a wrong payment: the right one still pays it;
/// - a refund or chargeback takes a paid checkout back (`refunded`); the purchase's own state change
///   makes the entitlement inactive. A refund result that names the `refundRequestId` Tollgate sent
///   (`POST /v1/checkouts/{id}/refund`; Antom's) is matched by that and given the checkout's reference
///   as its subject, the purchase its payment made; one that names no refund Tollgate asked for
///   changes nothing (counted `refund_unmatched`), and a failed one frees the checkout for another request.
/// Events that name no checkout pass as they are, without a step.
public struct CheckoutMatcher: Sendable {
    let records: CheckoutRecords
    let providers: CheckoutProviders
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64

    /// An event given its checkout's user and product, with what it does to the checkout.
    public struct Matched: Sendable {
        public var event: NormalizedEvent
        /// Nil when the notification cannot move the checkout (pending, failed, canceled): no lock is taken.
        public var step: (any ProjectionStep)?
    }

    /// The event and its checkout step, or nil when it names no checkout (it passes as it is).
    public func match(_ event: NormalizedEvent) async throws(WorkerFailure) -> Matched? {
        guard let provider = providers[Projector.sourceName(of: event)] else { return nil }
        switch provider.checkoutReference(of: event) {
        case .refundRequest(let id): return try await matchRefund(event, provider: provider.name, refundRequestId: id)
        case .payment(let reference):
            let found: CheckoutRecord?
            do {
                found = try await records.find(provider: provider.name, account: event.app, reference: reference)
            } catch {
                throw WorkerFailure.store(error)
            }
            guard let checkout = found else { return nil }
            var matched = event
            matched.user = checkout.user
            matched.product = checkout.product
            let notice: CheckoutStateMachine.Notice
            var quarantined: QuarantinedPayment?
            switch event.type {
            case .purchaseCompleted:
                let mismatch = Self.mismatch(event, checkout)
                notice = .payment(mismatch: mismatch?.reason)
                quarantined = mismatch.map {
                    QuarantinedPayment(eventId: event.id, checkout: checkout, reason: $0.reason, detail: "\($0.reason.rawValue): \($0.detail)",
                                       paymentId: event.transaction?.id, quarantinedAtMs: now())
                }
            case .purchaseRefunded, .purchaseChargeback: notice = .reversal
            // Pending, failed, canceled: the purchase records them for the user; the checkout does not move.
            default: return Matched(event: matched, step: nil)
            }
            return Matched(event: matched, step: step(checkout, provider: provider.name, notice, paymentId: provider.paymentId(of: event),
                                                      quarantined: quarantined, event: event))
        }
    }

    /// A refund result, by the `refundRequestId` Tollgate sent for the checkout. One that names none
    /// still gets a step: it counts the result as unmatched, and holds its change back.
    private func matchRefund(_ event: NormalizedEvent, provider: SourceName, refundRequestId: String) async throws(WorkerFailure) -> Matched {
        let found: CheckoutRecord?
        do {
            found = try await records.find(provider: provider, account: event.app, refundRequestId: refundRequestId)
        } catch {
            throw WorkerFailure.store(error)
        }
        let result: CheckoutStateMachine.RefundResult = switch event.type {
        case .purchaseRefunded: .succeeded
        case .purchaseRefundDeclined: .declined
        default: .unknown
        }
        var matched = event
        if let checkout = found {
            matched.subject = checkout.reference
            matched.user = checkout.user
            matched.product = checkout.product
        }
        return Matched(event: matched, step: step(found, provider: provider, .refundResult(result, current: found != nil), paymentId: nil,
                                                  quarantined: nil, event: event, refundRequestId: refundRequestId))
    }

    private func step(_ checkout: CheckoutRecord?, provider: SourceName, _ notice: CheckoutStateMachine.Notice, paymentId: String?,
                      quarantined: QuarantinedPayment?, event: NormalizedEvent, refundRequestId: String? = nil) -> CheckoutStep {
        CheckoutStep(checkout: checkout, provider: provider, notice: notice, paymentId: paymentId, quarantined: quarantined,
                     refundRequestId: refundRequestId, eventApp: event.app, eventReason: event.reason, metrics: metrics, logger: logger)
    }

    /// Why a completed payment does not pay this checkout, and what was notified and expected; nil when it does.
    static func mismatch(_ event: NormalizedEvent, _ checkout: CheckoutRecord) -> (reason: QuarantinedPayment.Reason, detail: String)? {
        guard event.environment == checkout.environment else {
            return (.environmentMismatch, "the notification is \(event.environment.rawValue), the checkout \(checkout.environment.rawValue)")
        }
        guard let price = event.price else { return (.amountMissing, "the notification carries no signed amount") }
        guard price.currency.uppercased() == checkout.currency else {
            return (.currencyMismatch, "notified \(price.currency.uppercased()), expected \(checkout.currency)")
        }
        let expected = MinorUnits.micros(checkout.amountMinor, currency: checkout.currency)
        guard price.amountMicros == expected else {
            let wanted = expected.map { MinorUnits.text(micros: $0, currency: checkout.currency) } ?? "\(checkout.amountMinor) minor units of \(checkout.currency)"
            return (.amountMismatch, "notified \(MinorUnits.text(micros: price.amountMicros, currency: price.currency)), expected \(wanted)")
        }
        return nil
    }
}

/// What a notification does to its checkout, applied in the projection's transaction before the
/// event's purchase change: the checkout's state read under lock, `CheckoutStateMachine` decides, the
/// move (or the quarantined payment, or the cleared refund request) written; counted and logged once
/// the transaction committed.
struct CheckoutStep: ProjectionStep {
    /// The checkout the notification names, as the matcher read it (its id and fixed fields); nil: none.
    let checkout: CheckoutRecord?
    let provider: SourceName
    let notice: CheckoutStateMachine.Notice
    /// The provider's payment id a paid notification carries, kept for a refund.
    let paymentId: String?
    let quarantined: QuarantinedPayment?
    /// The refund request a refund result names.
    let refundRequestId: String?
    let eventApp: String
    let eventReason: String?
    let metrics: MerchantMetrics
    let logger: Logger

    func apply(eventId: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> ProjectionStepResult {
        var notice = notice
        var state: CheckoutRecord.State?
        if let checkout {
            let locked = try CheckoutRows.lock(id: checkout.id, on: connection)
            state = locked?.state
            // The request may have been cleared (refused, failed) since the matcher read it.
            if case .refundResult(let result, _) = notice {
                notice = .refundResult(result, current: locked != nil && locked?.refundRequestId == refundRequestId)
            }
        }
        let decision = CheckoutStateMachine.decide(notice, state: state)
        var outcome = decision.outcome
        if let next = decision.next, let checkout {
            let moved = try CheckoutRows.move(id: checkout.id, to: next, paidEventId: next == .paid ? eventId : nil,
                                              paymentId: next == .paid ? paymentId : nil, nowMs: nowMs, on: connection)
            if !moved { outcome = nil }
        }
        if decision.quarantine, let quarantined, !(try CheckoutRows.quarantine(quarantined, on: connection)) { outcome = nil }
        if decision.clearRefundRequest, let checkout, let refundRequestId {
            try CheckoutRows.clearRefundRequest(refundRequestId, id: checkout.id, nowMs: nowMs, on: connection)
        }
        guard let outcome else { return ProjectionStepResult(proceeds: decision.proceeds) }
        let counted = state
        return ProjectionStepResult(proceeds: decision.proceeds, afterCommit: { self.report(outcome, eventId: eventId, state: counted) })
    }

    private func report(_ outcome: String, eventId: String, state: CheckoutRecord.State?) {
        metrics.checkoutNotification(provider: provider.rawValue, outcome: outcome)
        let checkoutId: Logger.MetadataValue = .string(checkout?.id ?? "")
        switch outcome {
        case "paid", "paid_after_expiry":
            logger.info("checkout paid", metadata: ["checkout": checkoutId, "event_id": .string(eventId), "outcome": .string(outcome)])
        case "refunded":
            logger.info("checkout refunded", metadata: ["checkout": checkoutId, "event_id": .string(eventId)])
        case "quarantined":
            metrics.checkoutPaymentQuarantined(provider: provider.rawValue, reason: quarantined?.reason.rawValue ?? "unknown")
            logger.warning("a payment does not match its checkout: quarantined, it entitles nobody; the checkout is unchanged",
                           metadata: ["checkout": checkoutId, "checkout_state": .string(state?.rawValue ?? "gone"),
                                      "event_id": .string(eventId), "reason": .string(quarantined?.detail ?? "")])
        case "refund_unmatched":
            logger.warning("a refund result names no refund asked through Tollgate and changes nothing",
                           metadata: ["event_id": .string(eventId), "app": .string(eventApp)])
        case "refund_failed":
            logger.warning("the provider reports the checkout's refund failed; the checkout stays paid",
                           metadata: ["checkout": checkoutId, "event_id": .string(eventId), "reason": .string(eventReason ?? "")])
        case "refund_unknown":
            logger.warning("a refund result with an unknown status changes nothing", metadata: ["checkout": checkoutId, "event_id": .string(eventId)])
        default:
            break
        }
    }
}
