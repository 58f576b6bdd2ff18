import Prometheus
import ServiceHost
import TestSupport
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
        let factory = PrometheusFamiliesFactory(registry: registry, families: WorkerMetrics.families)
        let metrics = WorkerMetrics(factory: factory)
        metrics.processed(type: "subscription.renewed", outcome: "applied")
        metrics.failed(type: "subscription.renewed", route: "retry", failure: WorkerFailure.Kind.storeUnavailable.rawValue)
        metrics.retried(topic: "tollgate.events-retry-5000")
        metrics.unconfirmed(type: "purchase.refunded")
        metrics.apiRejected(reason: "invalid_environment")
        metrics.purchaseReported(store: "apple", outcome: "applied")
        metrics.deadLettered()
        metrics.batch(size: 10, duration: .milliseconds(4))
        metrics.lag(topic: "tollgate.events", partition: 0, lag: 3)
        metrics.outboxPublished(1)
        metrics.outboxPending(0)
        metrics.expiriesQueued(1)
        metrics.consumptionAnswer(outcome: ConsumptionAnswerer.Outcome.sent.rawValue)
        metrics.reconcilePage(job: "apple")
        metrics.reconcileItems(job: "apple", outcome: "new", count: 1)
        metrics.reconcileRateLimited(job: "apple")
        metrics.reconcileRun(job: "apple", outcome: "ok")
        metrics.sileoRejected(vendor: "/sileo/dev", reason: "invalid_sileo_token")
        metrics.sileoDownload(vendor: "/sileo/dev", delivery: "file")
        metrics.purchaseReported(store: "google", outcome: "applied")
        metrics.playAcknowledgement(.queued)
        metrics.playAcknowledgementsPending(1, oldestAgeSeconds: 30)
        let play = PlayAPIMetrics(factory: factory)
        play.requestDuration(.subscription, .milliseconds(20))
        play.error(.subscription, kind: "timeout")
        let appStore = AppStoreAPIMetrics(factory: factory)
        appStore.requestDuration(.transactionInfo, .milliseconds(30))
        appStore.error(.transactionInfo, kind: "rate_limited")
        metrics.checkoutStarted(provider: "citcon", outcome: "created")
        metrics.checkoutNotification(provider: "citcon", outcome: "paid")
        metrics.checkoutsExpired(1)
        metrics.checkoutsPruned(1)
        metrics.checkoutRefund(outcome: "requested")
        metrics.checkoutPaymentQuarantined(provider: "citcon", reason: "amount_mismatch")
        let antom = AntomAPIMetrics(factory: factory)
        antom.requestDuration(.pay, .milliseconds(40))
        antom.error(.pay, kind: "timeout")

        let exposed = ExposedFamilies(registry.emitToString())
        #expect(exposed.all == Dictionary(uniqueKeysWithValues: WorkerMetrics.families.map { ($0.name, $0.kind) }))
        #expect(exposed.help == Dictionary(uniqueKeysWithValues: WorkerMetrics.families.map { ($0.name, $0.help) }))
        #expect(WorkerMetrics.families.allSatisfy { !$0.help.isEmpty })
    }
}
