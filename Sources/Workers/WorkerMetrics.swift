import Console
import CoreMetrics
import Events
import Merchant
import Metrics
import ProviderAPIs
import Toolkit
import Webhooks

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

    func lag(topic: String, partition: Int32, lag: Int64, metric: String = "tollgate_consumer_lag") {
        Gauge(label: metric, dimensions: [("topic", topic), ("partition", String(partition))], factory: factory)
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

    /// The families the projection, retries and outbox emit (held to what they emit by WorkersTests).
    public static let families: [MetricFamily] = [
        MetricFamily("tollgate_worker_events_total", .counter, labels: ["type", "outcome"], help: "Events handled by the projection, by type and outcome."),
        MetricFamily("tollgate_worker_failures_total", .counter, labels: ["type", "route", "failure"], help: "Events that failed, by type, where they went (retry, dead_letter) and why."),
        MetricFamily("tollgate_worker_unconfirmed_events_total", .counter, labels: ["type"], help: "Events whose claim the sender's API does not confirm (forged or stale), by type: they change nothing the API does not report."),
        MetricFamily("tollgate_worker_retries_total", .counter, labels: ["topic"], help: "Events sent to a retry topic, by topic."),
        MetricFamily("tollgate_worker_dead_letters_total", .counter, help: "Events parked in the dead-letter topic."),
        MetricFamily("tollgate_worker_batch_size", .histogram, help: "Events per projection batch."),
        MetricFamily("tollgate_worker_batch_duration_seconds", .histogram, help: "Time to apply one projection batch."),
        MetricFamily("tollgate_consumer_lag", .gauge, labels: ["topic", "partition"], help: "Records not yet consumed, by topic and partition."),
        MetricFamily("tollgate_console_raw_index_lag", .gauge, labels: ["topic", "partition"],
                     help: "Raw records the operator console's delivery index has not read yet, by topic and partition."),
        MetricFamily("tollgate_outbox_published_total", .counter, help: "Entitlement changes published to the entitlements topic."),
        MetricFamily("tollgate_outbox_pending", .gauge, help: "Entitlement changes waiting in the outbox."),
        MetricFamily("tollgate_worker_expiries_total", .counter, help: "Entitlements whose expiry or grace period ended without a notification, queued as inactive."),
    ]

    /// Every family the workers process emits: its own, the merchant features' and the provider APIs'.
    public static let all: [MetricFamily] = families + MerchantMetrics.families + ProviderAPIMetrics.families + WebhookMetrics.families + ConsoleMetrics.families
}
