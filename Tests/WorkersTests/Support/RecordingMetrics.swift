import CoreMetrics
import Synchronization

/// A metrics factory that keeps counter totals and gauges' values in memory, one per worker instance, so
/// a test reads what each instance counted (swift-metrics' global system would mix them). Histograms
/// and timers are ignored.
final class RecordingMetrics: MetricsFactory {
    struct Key: Hashable, Sendable {
        var label: String
        var dimensions: [String: String]
    }

    private let counters = Mutex<[Key: Int64]>([:])
    private let gauges = Mutex<[String: (last: Double, highest: Double)]>([:])

    /// The last value and the highest ever recorded of the gauge named `label` (dimensions ignored); nil when never recorded.
    func gauge(_ label: String) -> (last: Double, highest: Double)? {
        gauges.withLock { $0[label] }
    }

    fileprivate func record(_ value: Double, gauge label: String) {
        gauges.withLock { gauges in
            gauges[label] = (value, max(value, gauges[label]?.highest ?? value))
        }
    }

    /// The sum of the counters named `label` whose dimensions include every given one.
    func total(_ label: String, _ dimensions: [String: String] = [:]) -> Int64 {
        counters.withLock { counters in
            counters.filter { key, _ in
                key.label == label && dimensions.allSatisfy { key.dimensions[$0.key] == $0.value }
            }.values.reduce(0, +)
        }
    }

    /// `tollgate_worker_events_total` for one outcome (applied, unchanged, duplicate), or all of them.
    func events(_ outcome: String? = nil) -> Int64 {
        total("tollgate_worker_events_total", outcome.map { ["outcome": $0] } ?? [:])
    }

    fileprivate func add(_ amount: Int64, to key: Key) {
        counters.withLock { $0[key, default: 0] += amount }
    }

    fileprivate func reset(_ key: Key) {
        counters.withLock { $0[key] = 0 }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Counting(metrics: self, key: Key(label: label, dimensions: Dictionary(dimensions) { $1 }))
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        aggregate ? Ignored() : Gauging(metrics: self, label: label)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { Ignored() }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}

/// WorkerMetrics makes a new handler per increment: every handler of one key adds to the same total.
private final class Counting: CounterHandler {
    let metrics: RecordingMetrics
    let key: RecordingMetrics.Key

    init(metrics: RecordingMetrics, key: RecordingMetrics.Key) {
        self.metrics = metrics
        self.key = key
    }

    func increment(by amount: Int64) { metrics.add(amount, to: key) }
    func reset() { metrics.reset(key) }
}

/// A gauge (a recorder that does not aggregate): its values kept.
private final class Gauging: RecorderHandler {
    let metrics: RecordingMetrics
    let label: String

    init(metrics: RecordingMetrics, label: String) {
        self.metrics = metrics
        self.label = label
    }

    func record(_ value: Int64) { metrics.record(Double(value), gauge: label) }
    func record(_ value: Double) { metrics.record(value, gauge: label) }
}

private final class Ignored: RecorderHandler, TimerHandler {
    func record(_ value: Int64) {}
    func record(_ value: Double) {}
    func recordNanoseconds(_ duration: Int64) {}
}
