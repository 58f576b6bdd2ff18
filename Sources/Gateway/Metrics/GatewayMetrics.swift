import Foundation
import Kafka
import Metrics
import Prometheus
import ServiceHost
import Spool
import Toolkit

/// The gateway's Prometheus metrics. Each gateway owns its registry, so several gateways in one
/// process (tests, `tollgate dev`) keep separate counts.
public struct GatewayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusFamiliesFactory
    private let silence = DeliverySilence()

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        self.factory = PrometheusFamiliesFactory(registry: registry, families: Self.families)
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

    /// With the embedded broker (`tollgate dev`): what each partition the workers read may still take
    /// before the producers refuse records (and the gateway spools, then answers 503).
    func embeddedBrokerState(_ logGuard: MockLogGuard?) {
        guard let logGuard else { return }
        embeddedBrokerState(logGuard.usage(), budgetBytes: logGuard.budgetBytes)
    }

    func embeddedBrokerState(_ usage: [MockLogGuard.PartitionUse], budgetBytes: Int) {
        for use in usage {
            Gauge(label: "tollgate_embedded_broker_headroom_bytes", dimensions: [("topic", use.topic), ("partition", String(use.partition))],
                  factory: factory).record(max(0, budgetBytes - use.bytes))
        }
    }

    /// Webhook requests of one sender admitted and not yet answered; made once per sender and kept,
    /// so admission does not look the gauge up per request.
    func inFlightGauge(source: String) -> Meter {
        Meter(label: "tollgate_http_in_flight", dimensions: [("source", source)], factory: factory)
    }

    /// An authentic delivery (accepted, duplicate or quarantined) of `app` (empty when it names none) at
    /// `seconds` since the epoch: the per-app timestamp, and the sender's silence clock restarted.
    /// Only remembered here (a lock and a dictionary entry): the gauges are written at the next scrape,
    /// so a delivery does not look a labelled gauge up in the registry.
    func delivered(source: String, app: String, atSeconds seconds: Double) {
        silence.delivered(source, app: app, atSeconds: seconds)
    }

    /// The senders whose silence is measured from now (the process start), and the configured
    /// `silence.<sender>` thresholds the alert compares it with.
    func watchSilence(senders: [String], thresholds: [String: Int], nowSeconds: Double) {
        silence.start(senders, atSeconds: nowSeconds)
        for (source, seconds) in thresholds {
            Gauge(label: "tollgate_sender_silence_threshold_seconds", dimensions: [("source", source)], factory: factory).record(seconds)
        }
    }

    /// Seconds since each watched sender's last authentic delivery (or the start), and each app's last
    /// delivery time, refreshed before each scrape.
    func silenceState(nowSeconds: Double) {
        let (senders, apps) = silence.snapshot()
        for (source, last) in senders {
            Gauge(label: "tollgate_sender_silence_seconds", dimensions: [("source", source)], factory: factory)
                .record(max(0, nowSeconds - last))
        }
        for (key, last) in apps {
            Gauge(label: "tollgate_last_delivery_timestamp_seconds", dimensions: [("source", key.source), ("app", key.app)], factory: factory)
                .record(last)
        }
    }

    public func exposition() -> String { registry.emitToString() }

    /// Every family the gateway emits (held to what it emits by GatewayTests).
    public static let families: [MetricFamily] = [
        MetricFamily("tollgate_http_requests_total", .counter, labels: ["route", "status"], help: "HTTP requests answered, by route template and status code."),
        MetricFamily("tollgate_http_request_duration_seconds", .histogram, labels: ["route"], help: "Time from request head to answer, by route template."),
        MetricFamily("tollgate_rejections_total", .counter, labels: ["source", "reason"], help: "Refused requests, by sender and reason code."),
        MetricFamily("tollgate_deliveries_accepted_total", .counter, labels: ["source"], help: "Deliveries verified and made durable, by sender."),
        MetricFamily("tollgate_events_published_total", .counter, labels: ["source", "type"], help: "Normalized events of accepted deliveries, by sender and event type."),
        MetricFamily("tollgate_deliveries_quarantined_total", .counter, labels: ["source", "reason"], help: "Authentic deliveries acknowledged but sent to the quarantine topic."),
        MetricFamily("tollgate_deliveries_written_total", .counter, labels: ["source", "outcome"], help: "How accepted deliveries were made durable: published, spooled or duplicate."),
        MetricFamily("tollgate_spool_relayed_total", .counter, help: "Spooled deliveries the relay published to Kafka."),
        MetricFamily("tollgate_kafka_reachable", .gauge, help: "1 while a Kafka broker answers, else 0."),
        MetricFamily("tollgate_spool_records", .gauge, help: "Records waiting in the spool."),
        MetricFamily("tollgate_spool_bytes", .gauge, help: "Bytes of records waiting in the spool."),
        MetricFamily("tollgate_spool_max_bytes", .gauge, help: "spool.maxBytes: past it deliveries Kafka does not take are answered 503."),
        MetricFamily("tollgate_spool_oldest_age_seconds", .gauge, help: "Age of the oldest record in the spool."),
        MetricFamily("tollgate_embedded_broker_headroom_bytes", .gauge, labels: ["topic", "partition"],
                     help: "tollgate dev's embedded broker: bytes a partition the workers read may still take before records are refused (spooled, then 503)."),
        MetricFamily("tollgate_http_in_flight", .gauge, labels: ["source"], help: "Webhook requests admitted and not yet answered, by sender."),
        MetricFamily("tollgate_last_delivery_timestamp_seconds", .gauge, labels: ["source", "app"],
                     help: "When this gateway last accepted an authentic delivery of the app, in seconds since the epoch."),
        MetricFamily("tollgate_sender_silence_seconds", .gauge, labels: ["source"],
                     help: "Seconds since this gateway's last authentic delivery of the sender, or since it started."),
        MetricFamily("tollgate_sender_silence_threshold_seconds", .gauge, labels: ["source"],
                     help: "silence.<sender>: how long the sender may be silent before TollgateSenderSilent fires."),
    ]
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// When each sender, and each app of it, last delivered something authentic to this gateway (a
/// sender's clock starts when watching began), for `tollgate_sender_silence_seconds` and
/// `tollgate_last_delivery_timestamp_seconds`.
final class DeliverySilence: @unchecked Sendable {
    struct App: Hashable {
        var source: String
        var app: String
    }

    private let lock = NSLock()
    private var senders: [String: Double] = [:]
    private var apps: [App: Double] = [:]

    func start(_ names: [String], atSeconds seconds: Double) {
        lock.withLock { for name in names where senders[name] == nil { senders[name] = seconds } }
    }

    /// `app` empty when the delivery named none (a quarantined push): the sender's clock only.
    func delivered(_ sender: String, app: String, atSeconds seconds: Double) {
        lock.withLock {
            senders[sender] = max(senders[sender] ?? seconds, seconds)
            if !app.isEmpty {
                let key = App(source: sender, app: app)
                apps[key] = max(apps[key] ?? seconds, seconds)
            }
        }
    }

    func snapshot() -> (senders: [String: Double], apps: [App: Double]) {
        lock.withLock { (senders, apps) }
    }
}
