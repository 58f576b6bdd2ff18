@testable import Gateway
@testable import Spool
import Testing
import Toolkit

/// The families `GatewayMetrics.families` lists (what `tollgate describe` prints and the deploy checks
/// hold alerts and dashboards to) are exactly the families the gateway emits.
@Suite("Gateway metric families")
struct GatewayMetricFamiliesTests {
    @Test("every function's families are listed, with their types, and nothing listed is missing")
    func listedEqualsEmitted() {
        let metrics = GatewayMetrics()
        metrics.request(route: "/webhooks/iaptic", status: 200, duration: .milliseconds(3))
        metrics.rejection(source: "iaptic", reason: "wrong_password")
        metrics.accepted(source: "iaptic", eventTypes: ["subscription.renewed"])
        metrics.quarantined(source: "google", reason: "not_an_rtdn")
        metrics.written(source: "iaptic", outcome: "published")
        metrics.spoolRelayed(2)
        metrics.durabilityState(spool: SpoolStats(records: 1, bytes: 10, maxBytes: 100, oldestSpooledAtMs: 0), kafkaReachable: true)
        metrics.inFlightGauge(source: "iaptic").increment()
        #expect(ExposedFamilies(metrics.exposition()).all == Dictionary(uniqueKeysWithValues: GatewayMetrics.families.map { ($0.name, $0.kind) }))
        #expect(GatewayMetrics.families.allSatisfy { !$0.help.isEmpty })
    }
}

/// `# TYPE name kind` lines of a Prometheus exposition.
struct ExposedFamilies {
    let all: [String: MetricFamily.Kind]

    init(_ text: String) {
        var all: [String: MetricFamily.Kind] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            guard parts.count == 4 else { continue }
            all[String(parts[2])] = MetricFamily.Kind(rawValue: String(parts[3]))
        }
        self.all = all
    }
}
