import CoreMetrics
import Events
import Metrics
import Toolkit

/// The workers' metrics. The factory is injected so several workers in one process (tests) keep separate
/// counts; the command line passes the process's Prometheus factory.
public struct WorkerMetrics: Sendable {
    let factory: any MetricsFactory

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// An event handled, by type and outcome (applied, unchanged, duplicate).
    func processed(type: String, outcome: String) {
        Counter(label: "tollgate_worker_events_total", dimensions: [("type", type), ("outcome", outcome)], factory: factory).increment()
    }

    /// An event that failed, by type and where it went (retry, dead_letter) and why.
    func failed(type: String, route: String, failure: String) {
        Counter(label: "tollgate_worker_failures_total", dimensions: [("type", type), ("route", route), ("failure", failure)],
                factory: factory).increment()
    }

    /// An event whose claim the sender's API does not confirm (a forged or stale notification), by type.
    func unconfirmed(type: String) {
        Counter(label: "tollgate_worker_unconfirmed_events_total", dimensions: [("type", type)], factory: factory).increment()
    }

    /// A purchase an app reported (`POST /v1/purchases`, `/v1/validate`), by store and outcome.
    func purchaseReported(store: String, outcome: String) {
        Counter(label: "tollgate_purchases_total", dimensions: [("store", store), ("outcome", outcome)], factory: factory).increment()
    }

    /// A call of the entitlement API refused, by reason code.
    func apiRejected(reason: String) {
        Counter(label: "tollgate_api_rejections_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    func retried(topic: String) {
        Counter(label: "tollgate_worker_retries_total", dimensions: [("topic", topic)], factory: factory).increment()
    }

    func deadLettered() {
        Counter(label: "tollgate_worker_dead_letters_total", factory: factory).increment()
    }

    func batch(size: Int, duration: Duration) {
        Recorder(label: "tollgate_worker_batch_size", factory: factory).record(size)
        Metrics.Timer(label: "tollgate_worker_batch_duration_seconds", factory: factory)
            .recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    func lag(topic: String, partition: Int32, lag: Int64) {
        Gauge(label: "tollgate_consumer_lag", dimensions: [("topic", topic), ("partition", String(partition))], factory: factory)
            .record(lag)
    }

    func outboxPublished(_ count: Int) {
        Counter(label: "tollgate_outbox_published_total", factory: factory).increment(by: count)
    }

    func outboxPending(_ count: Int) {
        Gauge(label: "tollgate_outbox_pending", factory: factory).record(count)
    }

    /// Entitlements whose expiry or grace period ended with no notification, queued as `active: false`.
    func expiriesQueued(_ count: Int) {
        Counter(label: "tollgate_worker_expiries_total", factory: factory).increment(by: count)
    }

    /// A consumption request from Apple handled, by outcome (sent, skipped_disabled, skipped_unknown_purchase, expired, failed).
    func consumptionAnswer(outcome: String) {
        Counter(label: "tollgate_worker_consumption_answers_total", dimensions: [("outcome", outcome)], factory: factory).increment()
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

    /// Every family the workers emit, the Play Developer API client's included (held to what they emit by WorkersTests).
    public static let families: [MetricFamily] = [
        MetricFamily("tollgate_worker_events_total", .counter, labels: ["type", "outcome"], help: "Events handled by the projection, by type and outcome."),
        MetricFamily("tollgate_worker_failures_total", .counter, labels: ["type", "route", "failure"], help: "Events that failed, by type, where they went (retry, dead_letter) and why."),
        MetricFamily("tollgate_worker_unconfirmed_events_total", .counter, labels: ["type"], help: "Events whose claim the sender's API does not confirm (forged or stale), by type: they change nothing the API does not report."),
        MetricFamily("tollgate_api_rejections_total", .counter, labels: ["reason"], help: "Entitlement API calls refused, by reason code."),
        MetricFamily("tollgate_purchases_total", .counter, labels: ["store", "outcome"],
                     help: "Purchases apps reported (POST /v1/purchases, /v1/validate), by store and outcome: applied (answered with the entitlements), pending (202: not applied within purchases.waitMs), unchanged (nothing new to publish)."),
        MetricFamily("tollgate_worker_retries_total", .counter, labels: ["topic"], help: "Events sent to a retry topic, by topic."),
        MetricFamily("tollgate_worker_dead_letters_total", .counter, help: "Events parked in the dead-letter topic."),
        MetricFamily("tollgate_worker_batch_size", .histogram, help: "Events per projection batch."),
        MetricFamily("tollgate_worker_batch_duration_seconds", .histogram, help: "Time to apply one projection batch."),
        MetricFamily("tollgate_consumer_lag", .gauge, labels: ["topic", "partition"], help: "Records not yet consumed, by topic and partition."),
        MetricFamily("tollgate_outbox_published_total", .counter, help: "Entitlement changes published to the entitlements topic."),
        MetricFamily("tollgate_outbox_pending", .gauge, help: "Entitlement changes waiting in the outbox."),
        MetricFamily("tollgate_worker_expiries_total", .counter, help: "Entitlements whose expiry or grace period ended without a notification, queued as inactive."),
        MetricFamily("tollgate_worker_consumption_answers_total", .counter, labels: ["outcome"],
                     help: "Apple consumption requests handled, by outcome (sent, skipped_disabled, skipped_unknown_purchase, expired, failed)."),
        MetricFamily("tollgate_app_store_api_request_duration_seconds", .histogram, labels: ["call"],
                     help: "App Store Server API requests, answered or not, by endpoint."),
        MetricFamily("tollgate_app_store_api_errors_total", .counter, labels: ["call", "kind"],
                     help: "App Store Server API calls that failed, by endpoint and kind (http_<status>, rate_limited, timeout, network, decode, signing)."),
        MetricFamily("tollgate_play_api_request_duration_seconds", .histogram, labels: ["call"], help: "Play Developer API exchanges, answered or not, by call."),
        MetricFamily("tollgate_play_api_errors_total", .counter, labels: ["call", "kind"], help: "Failed Play Developer API calls, by call and kind."),
        MetricFamily("tollgate_reconcile_pages_total", .counter, labels: ["job"], help: "Pages of a store's history read by a reconciliation job (apple: Get Notification History)."),
        MetricFamily("tollgate_reconcile_items_total", .counter, labels: ["job", "outcome"],
                     help: "Items reconciliation found, by job and outcome: new (published to tollgate.events), known (already processed), rejected (did not verify)."),
        MetricFamily("tollgate_reconcile_rate_limited_total", .counter, labels: ["job"], help: "429 answers a reconciliation job waited out (Retry-After)."),
        MetricFamily("tollgate_reconcile_runs_total", .counter, labels: ["job", "outcome"],
                     help: "Reconciliation of one scope (app and environment) run to its end (ok) or stopped by an error (failed)."),
        MetricFamily("tollgate_reconcile_last_success_timestamp_seconds", .gauge, labels: ["job"],
                     help: "When a reconciliation job last finished a scope without error (Unix seconds)."),
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

extension WorkerMetrics {
    /// A Sileo vendor API call refused, by vendor (its base path) and reason code.
    func sileoRejected(vendor: String, reason: String) {
        Counter(label: "tollgate_sileo_rejections_total", dimensions: [("vendor", vendor), ("reason", reason)], factory: factory).increment()
    }

    /// A package download served through a single-use key, by vendor and how (`file`, `redirect`).
    func sileoDownload(vendor: String, delivery: String) {
        Counter(label: "tollgate_sileo_downloads_total", dimensions: [("vendor", vendor), ("delivery", delivery)], factory: factory).increment()
    }
}
