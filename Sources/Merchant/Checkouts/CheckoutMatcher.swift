import Entitlements
import Events
import Logging
import Store
import Verifiers

/// Gives a checkout provider's event (`CheckoutProviders`: Alipay+ / Antom, Citcon) the user and
/// product of the checkout its reference names (the event's `subject`, under the same provider and
/// account, the event's `app`), in the projection before the event is applied (docs/checkouts.md):
/// - a completed payment whose signed amount and currency (and environment) are the checkout's pays
///   it: the checkout becomes `paid` and the event entitles its user to its product, even when the
///   checkout had expired (the money was taken; counted as `paid_after_expiry`);
/// - one that differs is a quarantined payment: kept with its reason (`checkout_quarantined_payments`),
///   counted and logged, and the event entitles nobody (it is kept as processed-unchanged, not
///   dead-lettered: a replay would only quarantine it again). The checkout stays as it was, so whoever
///   knows a reference cannot lock the owner's checkout with a wrong payment: the right one still pays it;
/// - a refund or chargeback takes a paid checkout back (`refunded`); the purchase's own state change
///   makes the entitlement inactive. A refund result that names the `refundRequestId` Tollgate sent
///   (`POST /v1/checkouts/{id}/refund`; Antom's) is matched by that and given the checkout's reference
///   as its subject, the purchase its payment made; one that names no refund Tollgate asked for
///   changes nothing (counted `refund_unmatched`), and a failed one frees the checkout for another request.
/// Events that name no checkout pass as they are.
public struct CheckoutMatcher: Sendable {
    let records: CheckoutRecords
    let providers: CheckoutProviders
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64

    /// The event to apply, or nil when it must change nothing.
    public func match(_ event: NormalizedEvent) async throws(WorkerFailure) -> NormalizedEvent? {
        guard let checkoutProvider = providers[Projector.sourceName(of: event)] else { return event }
        let provider = checkoutProvider.name.rawValue
        let reference: String
        switch checkoutProvider.checkoutReference(of: event) {
        case .refundRequest(let id): return try await matchRefund(event, provider: checkoutProvider.name, refundRequestId: id)
        case .payment(let named): reference = named
        }
        let found: CheckoutRecord?
        do {
            found = try await records.find(provider: checkoutProvider.name, account: event.app, reference: reference)
        } catch {
            throw WorkerFailure.store(error)
        }
        guard let checkout = found else { return event }
        var matched = event
        matched.user = checkout.user
        matched.product = checkout.product
        switch event.type {
        case .purchaseCompleted:
            if let mismatch = Self.mismatch(event, checkout) {
                try await quarantine(event, against: checkout, mismatch)
                return nil
            }
            switch checkout.state {
            case .pending, .expired:
                let moved = try await transition(checkout, from: [.pending, .expired], to: .paid, paidEventId: event.id,
                                                 paymentId: checkoutProvider.paymentId(of: event))
                if moved {
                    let outcome = checkout.state == .expired ? "paid_after_expiry" : "paid"
                    metrics.checkoutNotification(provider: provider, outcome: outcome)
                    logger.info("checkout paid", metadata: ["checkout": .string(checkout.id), "event_id": .string(event.id),
                                                            "outcome": .string(outcome)])
                }
                return matched
            case .paid:
                metrics.checkoutNotification(provider: provider, outcome: "repeated")
                return matched
            case .refunded:
                // A late copy of the payment must not entitle again.
                metrics.checkoutNotification(provider: provider, outcome: "repeated")
                return nil
            }
        case .purchaseRefunded, .purchaseChargeback:
            if checkout.state == .paid, try await transition(checkout, from: [.paid], to: .refunded) {
                metrics.checkoutNotification(provider: provider, outcome: "refunded")
                logger.info("checkout refunded", metadata: ["checkout": .string(checkout.id), "event_id": .string(event.id)])
            }
            return matched
        default:
            // Pending, failed, canceled: the purchase records them for this user; nothing entitles.
            return matched
        }
    }

    /// A refund result, by the `refundRequestId` Tollgate sent for the checkout.
    private func matchRefund(_ event: NormalizedEvent, provider: SourceName, refundRequestId: String) async throws(WorkerFailure) -> NormalizedEvent? {
        let found: CheckoutRecord?
        do {
            found = try await records.find(provider: provider, account: event.app, refundRequestId: refundRequestId)
        } catch {
            throw WorkerFailure.store(error)
        }
        guard let checkout = found else {
            // Asked elsewhere (the provider's dashboard): nothing here says which payment it returned.
            metrics.checkoutNotification(provider: provider.rawValue, outcome: "refund_unmatched")
            logger.warning("a refund result names no refund asked through Tollgate and changes nothing",
                           metadata: ["event_id": .string(event.id), "app": .string(event.app)])
            return nil
        }
        var matched = event
        matched.subject = checkout.reference
        matched.user = checkout.user
        matched.product = checkout.product
        switch event.type {
        case .purchaseRefunded:
            if try await transition(checkout, from: [.paid], to: .refunded) {
                metrics.checkoutNotification(provider: provider.rawValue, outcome: "refunded")
                logger.info("checkout refunded", metadata: ["checkout": .string(checkout.id), "event_id": .string(event.id)])
            }
            return matched
        case .purchaseRefundDeclined:
            // Nothing to project: the purchase stands. The request is freed for another ask.
            metrics.checkoutNotification(provider: provider.rawValue, outcome: "refund_failed")
            logger.warning("the provider reports the checkout's refund failed; the checkout stays paid",
                           metadata: ["checkout": .string(checkout.id), "event_id": .string(event.id),
                                      "reason": .string(event.reason ?? "")])
            do {
                try await records.clearRefundRequest(refundRequestId, id: checkout.id, nowMs: now())
            } catch {
                throw WorkerFailure.store(error)
            }
            return nil
        default:
            // A refund status the provider does not document: the request stays under way for its final result.
            metrics.checkoutNotification(provider: provider.rawValue, outcome: "refund_unknown")
            logger.warning("a refund result with an unknown status changes nothing",
                           metadata: ["checkout": .string(checkout.id), "event_id": .string(event.id)])
            return nil
        }
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
        guard let expected = MinorUnits.micros(checkout.amountMinor, currency: checkout.currency), price.amountMicros == expected else {
            return (.amountMismatch, "notified \(price.amountMicros) micros, expected \(checkout.amountMinor) minor units")
        }
        return nil
    }

    /// Keeps the payment, not the checkout, in quarantine: whatever state the checkout is in stays.
    private func quarantine(_ event: NormalizedEvent, against checkout: CheckoutRecord,
                            _ mismatch: (reason: QuarantinedPayment.Reason, detail: String)) async throws(WorkerFailure) {
        let payment = QuarantinedPayment(eventId: event.id, checkout: checkout, reason: mismatch.reason,
                                         detail: "\(mismatch.reason.rawValue): \(mismatch.detail)", paymentId: event.transaction?.id,
                                         quarantinedAtMs: now())
        let kept: Bool
        do { kept = try await records.quarantine(payment) } catch { throw WorkerFailure.store(error) }
        guard kept else { return }
        metrics.checkoutNotification(provider: checkout.provider.rawValue, outcome: "quarantined")
        metrics.checkoutPaymentQuarantined(provider: checkout.provider.rawValue, reason: mismatch.reason.rawValue)
        logger.warning("a payment does not match its checkout: quarantined, it entitles nobody; the checkout is unchanged",
                       metadata: ["checkout": .string(checkout.id), "checkout_state": .string(checkout.state.rawValue),
                                  "event_id": .string(event.id), "reason": .string(payment.detail)])
    }

    private func transition(_ checkout: CheckoutRecord, from: [CheckoutRecord.State], to state: CheckoutRecord.State,
                            paidEventId: String? = nil, paymentId: String? = nil) async throws(WorkerFailure) -> Bool {
        do {
            return try await records.transition(id: checkout.id, from: from, to: state, paidEventId: paidEventId,
                                                paymentId: paymentId, nowMs: now())
        } catch {
            throw WorkerFailure.store(error)
        }
    }
}
