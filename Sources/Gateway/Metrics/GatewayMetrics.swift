import Metrics
import Prometheus
import Spool

/// The gateway's Prometheus metrics. Each gateway owns its registry, so several gateways in one
/// process (tests, `tollgate dev`) keep separate counts.
public struct GatewayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
        ]
        self.factory = factory
    }

    /// Every HTTP request, by route template and status code.
    func request(route: String, status: Int, duration: Duration) {
        Counter(label: "tollgate_http_requests_total", dimensions: [("route", route), ("status", String(status))], factory: factory)
            .increment()
        Metrics.Timer(label: "tollgate_http_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// A refused delivery, by sender and reason code.
    func rejection(source: String, reason: String) {
        Counter(label: "tollgate_rejections_total", dimensions: [("source", source), ("reason", reason)], factory: factory)
            .increment()
    }

    /// A delivery made durable, and its events by type.
    func accepted(source: String, eventTypes: [String]) {
        Counter(label: "tollgate_deliveries_accepted_total", dimensions: [("source", source)], factory: factory).increment()
        for type in eventTypes {
            Counter(label: "tollgate_events_published_total", dimensions: [("source", source), ("type", type)], factory: factory)
                .increment()
        }
    }

    /// An authentic delivery acknowledged but sent to the quarantine topic, by sender and reason code.
    func quarantined(source: String, reason: String) {
        Counter(label: "tollgate_deliveries_quarantined_total", dimensions: [("source", source), ("reason", reason)], factory: factory)
            .increment()
    }

    /// How an accepted delivery was made durable: straight to Kafka, through the spool, or not at
    /// all because its events were accepted moments ago (a redelivery).
    func written(source: String, outcome: String) {
        Counter(label: "tollgate_deliveries_written_total", dimensions: [("source", source), ("outcome", outcome)], factory: factory)
            .increment()
    }

    /// Spooled deliveries the relay published.
    func spoolRelayed(_ count: Int) {
        guard count > 0 else { return }
        Counter(label: "tollgate_spool_relayed_total", factory: factory).increment(by: count)
    }

    /// The spool's and the cluster's state, refreshed before each scrape and by `/readyz`.
    func durabilityState(spool: SpoolStats?, kafkaReachable: Bool?) {
        if let kafkaReachable {
            Gauge(label: "tollgate_kafka_reachable", factory: factory).record(kafkaReachable ? 1 : 0)
        }
        guard let spool else { return }
        Gauge(label: "tollgate_spool_records", factory: factory).record(spool.records)
        Gauge(label: "tollgate_spool_bytes", factory: factory).record(spool.bytes)
        Gauge(label: "tollgate_spool_max_bytes", factory: factory).record(spool.maxBytes)
        Gauge(label: "tollgate_spool_oldest_age_seconds", factory: factory).record(spool.oldestAgeSeconds())
    }

    /// Webhook requests of one sender admitted and not yet answered; made once per sender and kept,
    /// so admission does not look the gauge up per request.
    func inFlightGauge(source: String) -> Meter {
        Meter(label: "tollgate_http_in_flight", dimensions: [("source", source)], factory: factory)
    }

    public func exposition() -> String { registry.emitToString() }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
