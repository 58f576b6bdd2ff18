import CoreMetrics
import Events
import Metrics
import Toolkit

/// The merchant features' metrics: the merchant APIs, purchases, checkouts, Sileo, consumption answers,
/// Play acknowledgements, reconciliation. The factory is injected so several workers in one process
/// (tests) keep separate counts.
public struct MerchantMetrics: Sendable {
    let factory: any MetricsFactory

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// A purchase an app reported (`POST /v1/purchases`, `/v1/validate`), by store and outcome.
    func purchaseReported(store: String, outcome: String) {
        Counter(label: "tollgate_purchases_total", dimensions: [("store", store), ("outcome", outcome)], factory: factory).increment()
    }

    /// A call of the entitlement API refused, by reason code.
    func apiRejected(reason: String) {
        Counter(label: "tollgate_api_rejections_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    /// A consumption request from Apple handled, by outcome (sent, skipped_disabled, skipped_unknown_purchase, expired, failed).
    func consumptionAnswer(outcome: String) {
        Counter(label: "tollgate_worker_consumption_answers_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// The consumption requests waiting for their answer, and how long ago Apple sent the oldest.
    func consumptionAnswersWaiting(_ count: Int, oldestAgeSeconds: Double) {
        Gauge(label: "tollgate_worker_consumption_answers_waiting", factory: factory).record(count)
        Gauge(label: "tollgate_worker_consumption_answer_oldest_age_seconds", factory: factory).record(oldestAgeSeconds)
    }

    /// A Google refund review handled, by outcome (answered, skipped_disabled, expired, failed).
    func refundReview(outcome: String) {
        Counter(label: "tollgate_refund_reviews_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// The refund reviews waiting for their answer, and how long ago the oldest arrived.
    func refundReviewsWaiting(_ count: Int, oldestAgeSeconds: Double) {
        Gauge(label: "tollgate_refund_reviews_waiting", factory: factory).record(count)
        Gauge(label: "tollgate_refund_review_oldest_age_seconds", factory: factory).record(oldestAgeSeconds)
    }

    /// A Set App Account Token call made, by outcome (set, failed).
    func appAccountToken(outcome: String) {
        Counter(label: "tollgate_app_account_tokens_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// Set App Account Token calls still to make.
    func appAccountTokensWaiting(_ count: Int) {
        Gauge(label: "tollgate_app_account_tokens_waiting", factory: factory).record(count)
    }

    /// A page of a store's history read by a reconciliation job (`apple`, `google`).
    func reconcilePage(job: String) {
        Counter(label: "tollgate_reconcile_pages_total", dimensions: [("job", job)], factory: factory).increment()
    }

    /// Items a reconciliation job found, by outcome: `new` (published), `known` (already processed),
    /// `rejected` (did not verify or normalize: not published).
    func reconcileItems(job: String, outcome: String, count: Int) {
        guard count > 0 else { return }
        Counter(label: "tollgate_reconcile_items_total", dimensions: [("job", job), ("outcome", outcome)], factory: factory)
            .increment(by: count)
    }

    /// A 429 from the store's API that the job waited out.
    func reconcileRateLimited(job: String) {
        Counter(label: "tollgate_reconcile_rate_limited_total", dimensions: [("job", job)], factory: factory).increment()
    }

    /// A scope (an app and environment, a package) reconciled to the end (`ok`) or stopped by an error (`failed`).
    func reconcileRun(job: String, outcome: String) {
        Counter(label: "tollgate_reconcile_runs_total", dimensions: [("job", job), ("outcome", outcome)], factory: factory).increment()
        if outcome == "ok" {
            Gauge(label: "tollgate_reconcile_last_success_timestamp_seconds", dimensions: [("job", job)], factory: factory)
                .record(Double(Timestamp.now.millisecondsSince1970) / 1000)
        }
    }

    /// A stored purchase re-read from its store, by store, trigger (`api`, `at_risk`, `console`) and outcome: `changed`
    /// (what the store says now was published), `unchanged`, `store_error` (the store's API did not answer
    /// usably), `not_found` (the store no longer knows it).
    func purchaseRefreshed(store: String, trigger: String, outcome: String) {
        Counter(label: "tollgate_purchase_refreshes_total", dimensions: [("store", store), ("trigger", trigger), ("outcome", outcome)],
                factory: factory).increment()
    }

    /// Purchases at risk the last pass of the at-risk refresh found due, and how many it left for the
    /// next pass because the store's quota was spent.
    func atRiskPass(due: Int, deferred: Int) {
        Gauge(label: "tollgate_purchase_refresh_due", factory: factory).record(due)
        Counter(label: "tollgate_purchase_refresh_deferred_total", factory: factory).increment(by: deferred)
    }

    /// A Sileo vendor API call refused, by vendor (its base path) and reason code.
    func sileoRejected(vendor: String, reason: String) {
        Counter(label: "tollgate_sileo_rejections_total", dimensions: [("vendor", vendor), ("reason", reason)], factory: factory).increment()
    }

    /// A package download served through a single-use key, by vendor and how (`file`, `redirect`).
    func sileoDownload(vendor: String, delivery: String) {
        Counter(label: "tollgate_sileo_downloads_total", dimensions: [("vendor", vendor), ("delivery", delivery)], factory: factory).increment()
    }

    /// Every family the merchant features emit (the checkouts' in CheckoutMetrics.swift).
    public static let families: [MetricFamily] = [
        MetricFamily("tollgate_api_rejections_total", .counter, labels: ["reason"], help: "Entitlement API calls refused, by reason code."),
        MetricFamily("tollgate_purchases_total", .counter, labels: ["store", "outcome"],
                     help: "Purchases apps reported (POST /v1/purchases, /v1/validate), by store and outcome: applied (answered with the entitlements), pending (202: not applied within purchases.waitMs), unchanged (nothing new to publish)."),
        MetricFamily("tollgate_worker_consumption_answers_total", .counter, labels: ["outcome"],
                     help: "Apple consumption requests handled, by outcome (sent, skipped_disabled, skipped_unknown_purchase, expired, failed)."),
        MetricFamily("tollgate_worker_consumption_answers_waiting", .gauge,
                     help: "Apple consumption requests queued by the projection and not yet answered (Apple unreachable or failing: retried until its 12 hours end)."),
        MetricFamily("tollgate_worker_consumption_answer_oldest_age_seconds", .gauge,
                     help: "How long ago Apple sent the oldest consumption request still waiting for its answer (0 when none waits); Apple takes answers for 12 hours."),
        MetricFamily("tollgate_refund_reviews_total", .counter, labels: ["outcome"],
                     help: "Google chargeback reviews handled, by outcome (answered, skipped_disabled, expired: Google's 24 hours passed unanswered, failed: refused for good)."),
        MetricFamily("tollgate_refund_reviews_waiting", .gauge, help: "Google chargeback reviews queued by the projection and not yet answered."),
        MetricFamily("tollgate_refund_review_oldest_age_seconds", .gauge,
                     help: "How long ago the oldest Google chargeback review still waiting for its answer arrived (0 when none waits); Google takes answers for 24 hours."),
        MetricFamily("tollgate_app_account_tokens_total", .counter, labels: ["outcome"],
                     help: "Set App Account Token calls to Apple, by outcome: set, failed (refused for good: a family-shared purchase, an unknown transaction)."),
        MetricFamily("tollgate_app_account_tokens_waiting", .gauge, help: "Set App Account Token calls queued and not yet made (Apple unreachable or failing: retried on the retry tiers)."),
        MetricFamily("tollgate_reconcile_pages_total", .counter, labels: ["job"], help: "Pages of a store's history read by a reconciliation job (apple: Get Notification History)."),
        MetricFamily("tollgate_reconcile_items_total", .counter, labels: ["job", "outcome"],
                     help: "Items reconciliation found, by job and outcome: new (published to tollgate.events), known (already processed), rejected (did not verify)."),
        MetricFamily("tollgate_reconcile_rate_limited_total", .counter, labels: ["job"], help: "429 answers a reconciliation job waited out (Retry-After)."),
        MetricFamily("tollgate_reconcile_runs_total", .counter, labels: ["job", "outcome"],
                     help: "Reconciliation of one scope (app and environment) run to its end (ok) or stopped by an error (failed)."),
        MetricFamily("tollgate_reconcile_last_success_timestamp_seconds", .gauge, labels: ["job"],
                     help: "When a reconciliation job last finished a scope without error (Unix seconds)."),
        MetricFamily("tollgate_purchase_refreshes_total", .counter, labels: ["store", "trigger", "outcome"],
                     help: "Stored purchases re-read from their store (trigger api: POST /v1/purchases/{purchase}/refresh; at_risk: the scheduler; console: an operator), by outcome: changed (the store's word published), unchanged, store_error, not_found."),
        MetricFamily("tollgate_purchase_refresh_due", .gauge,
                     help: "Purchases at risk (grace period, billing retry, on hold, pending, ending within the hour) due for a read at the at-risk refresh's last pass."),
        MetricFamily("tollgate_purchase_refresh_deferred_total", .counter,
                     help: "Purchases at risk left for a later pass because the store's quota for the refresh (workers.refreshPlayQueriesPerMinute, refreshAppleRequestsPerSecond) was spent."),
        MetricFamily("tollgate_sileo_rejections_total", .counter, labels: ["vendor", "reason"],
                     help: "Sileo Payment Provider API calls refused, by vendor base path and reason code."),
        MetricFamily("tollgate_sileo_downloads_total", .counter, labels: ["vendor", "delivery"],
                     help: "Sileo package downloads served through a single-use key, by vendor base path and delivery (file, redirect)."),
        MetricFamily("tollgate_worker_play_acknowledgements_total", .counter, labels: ["outcome"],
                     help: "Play purchase acknowledgements, by outcome: acknowledged (at once), queued (Google unreachable: left to the retry loop), already (queued before), retried (taken on a retry), expired (three days passed first: Google refunds it), failed (refused for good)."),
        MetricFamily("tollgate_worker_play_acknowledgements_pending", .gauge, help: "Play purchase acknowledgements waiting for the retry loop."),
        MetricFamily("tollgate_worker_play_acknowledgement_oldest_age_seconds", .gauge,
                     help: "How long the oldest Play acknowledgement waiting for the retry loop has waited (0 when none waits)."),
    ] + checkoutFamilies
}
