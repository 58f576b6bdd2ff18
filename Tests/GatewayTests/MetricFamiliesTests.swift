@testable import Gateway
@testable import Spool
import TestSupport
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
        let exposed = ExposedFamilies(metrics.exposition())
        #expect(exposed.all == Dictionary(uniqueKeysWithValues: GatewayMetrics.families.map { ($0.name, $0.kind) }))
        // Every family's HELP line is its listed text (promtool refuses a family without one).
        #expect(exposed.help == Dictionary(uniqueKeysWithValues: GatewayMetrics.families.map { ($0.name, $0.help) }))
        #expect(GatewayMetrics.families.allSatisfy { !$0.help.isEmpty })
    }
}
