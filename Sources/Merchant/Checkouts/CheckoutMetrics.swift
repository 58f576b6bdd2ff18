import Metrics
import Toolkit

/// The checkouts' counters (docs/checkouts.md), declared in `MerchantMetrics.families`.
extension MerchantMetrics {
    /// A `POST /v1/checkouts` (or Sileo purchase) that reached the provider step, by provider and outcome
    /// (created, repeated, refused, unavailable).
    func checkoutStarted(provider: String, outcome: String) {
        Counter(label: "tollgate_checkouts_started_total", dimensions: [("provider", provider), ("outcome", outcome)], factory: factory)
            .increment()
    }

    /// A provider notification that named a checkout, by provider and what it did (paid,
    /// paid_after_expiry, quarantined, refunded, repeated).
    func checkoutNotification(provider: String, outcome: String) {
        Counter(label: "tollgate_checkout_notifications_total", dimensions: [("provider", provider), ("outcome", outcome)], factory: factory)
            .increment()
    }

    /// A payment that named a checkout but does not match it, kept in `checkout_quarantined_payments`, by
    /// provider and reason (amount_mismatch, currency_mismatch, environment_mismatch, amount_missing).
    func checkoutPaymentQuarantined(provider: String, reason: String) {
        Counter(label: "tollgate_checkout_payments_quarantined_total", dimensions: [("provider", provider), ("reason", reason)],
                factory: factory).increment()
    }

    /// A `POST /v1/checkouts/{id}/refund` that reached Antom, by outcome (refunded, requested, refused, unavailable).
    func checkoutRefund(outcome: String) {
        Counter(label: "tollgate_checkout_refunds_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    func checkoutsExpired(_ count: Int) {
        Counter(label: "tollgate_checkouts_expired_total", factory: factory).increment(by: count)
    }

    func checkoutsPruned(_ count: Int) {
        Counter(label: "tollgate_checkouts_pruned_total", factory: factory).increment(by: count)
    }

    static let checkoutFamilies: [MetricFamily] = [
        MetricFamily("tollgate_checkouts_started_total", .counter, labels: ["provider", "outcome"],
                     help: "Checkouts asked for, by provider and outcome (created, repeated, refused, unavailable)."),
        MetricFamily("tollgate_checkout_notifications_total", .counter, labels: ["provider", "outcome"],
                     help: "Provider notifications that named a checkout, by provider and outcome (paid, paid_after_expiry, quarantined: a payment that does not match its checkout, refunded, refund_failed, repeated; refund_unmatched: a refund result naming no refund Tollgate asked for; refund_unknown: a refund status the provider does not document)."),
        MetricFamily("tollgate_checkout_payments_quarantined_total", .counter, labels: ["provider", "reason"],
                     help: "Payments that named a checkout but do not match it (reason: amount_mismatch, currency_mismatch, environment_mismatch, amount_missing): kept in checkout_quarantined_payments, entitling nobody; the checkout stays as it was."),
        MetricFamily("tollgate_checkout_refunds_total", .counter, labels: ["outcome"],
                     help: "Refunds of paid checkouts asked of their provider (Antom), by outcome: refunded (answered done: Antom S), requested (under way: U REFUND_IN_PROCESS), refused (F), unavailable."),
        MetricFamily("tollgate_checkouts_expired_total", .counter, help: "Checkouts marked expired, unpaid after checkouts.expirySeconds."),
        MetricFamily("tollgate_checkouts_pruned_total", .counter,
                     help: "Expired (never paid) checkouts deleted checkouts.retentionDays after they expired."),
    ]
}
