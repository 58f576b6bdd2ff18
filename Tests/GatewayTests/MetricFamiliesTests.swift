@testable import Gateway
import Kafka
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
        metrics.watchSilence(senders: ["iaptic", "google"], thresholds: ["google": 21_600], nowSeconds: 1_000)
        metrics.delivered(source: "iaptic", app: "demo", atSeconds: 1_100)
        metrics.silenceState(nowSeconds: 1_200)
        metrics.embeddedBrokerState([MockLogGuard.PartitionUse(topic: "tollgate.events", partition: 0, bytes: 1_000, records: 1)], budgetBytes: 4_000)
        let exposed = ExposedFamilies(metrics.exposition())
        #expect(exposed.all == Dictionary(uniqueKeysWithValues: GatewayMetrics.families.map { ($0.name, $0.kind) }))
        // Every family's HELP line is its listed text (promtool refuses a family without one).
        #expect(exposed.help == Dictionary(uniqueKeysWithValues: GatewayMetrics.families.map { ($0.name, $0.help) }))
        #expect(GatewayMetrics.families.allSatisfy { !$0.help.isEmpty })
    }
}

@Suite("Gateway sender silence")
struct SenderSilenceTests {
    @Test("silence counts from the start until a sender's first authentic delivery, then from its last; thresholds as configured")
    func silence() {
        let metrics = GatewayMetrics()
        metrics.watchSilence(senders: ["iaptic", "google"], thresholds: ["google": 21_600], nowSeconds: 1_000)
        metrics.delivered(source: "iaptic", app: "demo", atSeconds: 1_100)
        // A delivery that names no app (a quarantined push) restarts the sender's clock only.
        metrics.delivered(source: "google", app: "", atSeconds: 1_050)
        metrics.silenceState(nowSeconds: 1_400)
        let text = metrics.exposition()
        #expect(text.contains(#"tollgate_sender_silence_seconds{source="iaptic"} 300.0"#))
        #expect(text.contains(#"tollgate_sender_silence_seconds{source="google"} 350.0"#))
        #expect(text.contains(#"tollgate_last_delivery_timestamp_seconds{source="iaptic",app="demo"} 1100.0"#))
        #expect(!text.contains(#"tollgate_last_delivery_timestamp_seconds{source="google""#))
        #expect(text.contains(#"tollgate_sender_silence_threshold_seconds{source="google"} 21600.0"#))
        #expect(!text.contains(#"tollgate_sender_silence_threshold_seconds{source="iaptic"}"#))
    }
}
