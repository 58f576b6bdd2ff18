import CoreMetrics
import Metrics

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
}
