import Prometheus
import Testing
import Toolkit
@testable import Workers

/// The families `WorkerMetrics.families` lists (what `tollgate describe` prints) are exactly the
/// families the workers and their Play Developer API client emit.
@Suite("Worker metric families")
struct WorkerMetricFamiliesTests {
    @Test("every function's families are listed, with their types, and nothing listed is missing")
    func listedEqualsEmitted() {
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        let metrics = WorkerMetrics(factory: factory)
        metrics.processed(type: "subscription.renewed", outcome: "applied")
        metrics.failed(type: "subscription.renewed", route: "retry", failure: WorkerFailure.Kind.storeUnavailable.rawValue)
        metrics.retried(topic: "tollgate.events-retry-5000")
        metrics.unconfirmed(type: "purchase.refunded")
        metrics.apiRejected(reason: "invalid_environment")
        metrics.deadLettered()
        metrics.batch(size: 10, duration: .milliseconds(4))
        metrics.lag(topic: "tollgate.events", partition: 0, lag: 3)
        metrics.outboxPublished(1)
        metrics.outboxPending(0)
        metrics.expiriesQueued(1)
        let play = PlayAPIMetrics(factory: factory)
        play.requestDuration(.subscription, .milliseconds(20))
        play.error(PlayAPIError(call: .subscription, kind: .timeout, message: "timed out"))

        var exposed: [String: MetricFamily.Kind] = [:]
        for line in registry.emitToString().split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            if parts.count == 4 { exposed[String(parts[2])] = MetricFamily.Kind(rawValue: String(parts[3])) }
        }
        #expect(exposed == Dictionary(uniqueKeysWithValues: WorkerMetrics.families.map { ($0.name, $0.kind) }))
        #expect(WorkerMetrics.families.allSatisfy { !$0.help.isEmpty })
    }
}
