import CoreMetrics
import Metrics
import Toolkit

/// The outbound webhooks' metrics, per endpoint (its configured name: bounded by configuration).
public struct WebhookMetrics: Sendable {
    let factory: any MetricsFactory

    public init(factory: any MetricsFactory = MetricsSystem.factory) { self.factory = factory }

    func attempt(endpoint: String, outcome: AttemptRecord.Outcome, seconds: Double) {
        Counter(label: "tollgate_webhook_attempts_total", dimensions: [("endpoint", endpoint), ("outcome", outcome.rawValue)], factory: factory)
            .increment()
        Metrics.Timer(label: "tollgate_webhook_attempt_duration_seconds", dimensions: [("endpoint", endpoint)], factory: factory)
            .recordNanoseconds(Int64(seconds * 1_000_000_000))
    }

    func parked(endpoint: String) {
        Counter(label: "tollgate_webhook_parked_total", dimensions: [("endpoint", endpoint)], factory: factory).increment()
    }

    func disabledForFailing(endpoint: String) {
        Counter(label: "tollgate_webhook_endpoint_disabled_total", dimensions: [("endpoint", endpoint)], factory: factory).increment()
    }

    func state(endpoint: String, pending: Int, parked: Int, oldestPendingSeconds: Double, enabled: Bool) {
        Gauge(label: "tollgate_webhook_pending", dimensions: [("endpoint", endpoint)], factory: factory).record(pending)
        Gauge(label: "tollgate_webhook_parked", dimensions: [("endpoint", endpoint)], factory: factory).record(parked)
        Gauge(label: "tollgate_webhook_oldest_pending_age_seconds", dimensions: [("endpoint", endpoint)], factory: factory)
            .record(oldestPendingSeconds)
        Gauge(label: "tollgate_webhook_endpoint_enabled", dimensions: [("endpoint", endpoint)], factory: factory).record(enabled ? 1 : 0)
    }

    public static let families: [MetricFamily] = [
        MetricFamily("tollgate_webhook_attempts_total", .counter, labels: ["endpoint", "outcome"],
                     help: "Outbound webhook attempts, by endpoint and outcome (delivered, http_status, timeout, connection, address_refused)."),
        MetricFamily("tollgate_webhook_attempt_duration_seconds", .histogram, labels: ["endpoint"],
                     help: "Time from sending an outbound webhook to its endpoint's answer (or the failure), by endpoint."),
        MetricFamily("tollgate_webhook_parked_total", .counter, labels: ["endpoint"],
                     help: "Outbound webhook messages parked after their last attempt failed, by endpoint."),
        MetricFamily("tollgate_webhook_endpoint_disabled_total", .counter, labels: ["endpoint"],
                     help: "Endpoints disabled because every attempt failed for webhooks.disableAfterSeconds."),
        MetricFamily("tollgate_webhook_pending", .gauge, labels: ["endpoint"],
                     help: "Outbound webhook messages waiting for their endpoint (due, retrying, or behind one in their lane)."),
        MetricFamily("tollgate_webhook_parked", .gauge, labels: ["endpoint"],
                     help: "Outbound webhook messages parked and kept (tollgate webhooks replay sends them again)."),
        MetricFamily("tollgate_webhook_oldest_pending_age_seconds", .gauge, labels: ["endpoint"],
                     help: "Age of the oldest outbound webhook message still waiting for its endpoint (0 when none waits)."),
        MetricFamily("tollgate_webhook_endpoint_enabled", .gauge, labels: ["endpoint"],
                     help: "1 while the endpoint is delivered to, 0 while configuration or the store (failing, or an operator) disables it."),
    ]
}
