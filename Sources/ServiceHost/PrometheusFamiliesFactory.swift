import CoreMetrics
import Prometheus
import Toolkit

/// swift-metrics' factory over a Prometheus registry that writes each family's `# HELP` line from the
/// process's `MetricFamily` lists. swift-prometheus' own `PrometheusMetricsFactory` registers every
/// family with empty help (swift-metrics has no place for it), which `promtool check metrics` refuses.
/// A name no list declares gets no help; the metric-family tests and docs/interfaces.md's promtool
/// check catch that.
public struct PrometheusFamiliesFactory: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let help: [String: String]
    private let durationBuckets: [Duration]
    private let valueBuckets: [Double]

    public init(registry: PrometheusCollectorRegistry, families: [MetricFamily],
                durationBuckets: [Duration] = Self.defaultDurationBuckets,
                valueBuckets: [Double] = Self.defaultValueBuckets) {
        self.registry = registry
        // The same name in two lists (a process composing gateway and workers) carries the same text.
        self.help = Dictionary(families.map { ($0.name, $0.help) }, uniquingKeysWith: { first, _ in first })
        self.durationBuckets = durationBuckets
        self.valueBuckets = valueBuckets
    }

    /// From 250 µs (a verified webhook) to 10 s (a stalled store).
    public static let defaultDurationBuckets: [Duration] = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
    ]

    /// Counts such as events per batch (at most 500).
    public static let defaultValueBuckets: [Double] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000]

    /// The name as given (no unit suffix added: the names already end in theirs) and its help.
    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label.isEmpty ? "unnamed" : label, unitName: "", helpText: help[label] ?? "")
    }
}

extension PrometheusFamiliesFactory: CoreMetrics.MetricsFactory {
    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: descriptor(label), labels: dimensions, buckets: valueBuckets)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: durationBuckets)
    }

    public func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge {
            registry.unregisterGauge(gauge)
        } else if let histogram = handler as? ValueHistogram {
            registry.unregisterValueHistogram(histogram)
        }
    }

    public func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
