@testable import Console
import Entitlements
import Prometheus
import ServiceHost
import TestSupport
import Testing
import Toolkit
@testable import Merchant
@testable import ProviderAPIs
@testable import Webhooks
@testable import Workers

/// The families `WorkerMetrics.all` lists (what `tollgate describe` prints) are exactly the families the
/// workers, the merchant features, the provider API clients and the webhook dispatcher emit.
@Suite("Worker metric families")
struct WorkerMetricFamiliesTests {
    @Test("every function's families are listed, with their types, and nothing listed is missing")
    func listedEqualsEmitted() {
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusFamiliesFactory(registry: registry, families: WorkerMetrics.all)
        let metrics = WorkerMetrics(factory: factory)
        let merchant = MerchantMetrics(factory: factory)
        metrics.processed(type: "subscription.renewed", outcome: "applied")
        metrics.failed(type: "subscription.renewed", route: "retry", failure: WorkerFailure.Kind.storeUnavailable.rawValue)
        metrics.retried(topic: "tollgate.events-retry-5000")
        metrics.unconfirmed(type: "purchase.refunded")
        merchant.apiRejected(reason: "invalid_environment")
        merchant.purchaseReported(store: "apple", outcome: "applied")
        metrics.deadLettered()
        metrics.batch(size: 10, duration: .milliseconds(4))
        metrics.lag(topic: "tollgate.events", partition: 0, lag: 3)
        metrics.lag(topic: "tollgate.raw.apple", partition: 0, lag: 3, metric: "tollgate_console_raw_index_lag")
        metrics.outboxPublished(1)
        metrics.outboxPending(0)
        metrics.expiriesQueued(1)
        merchant.consumptionAnswer(outcome: ConsumptionAnswerer.Outcome.sent.rawValue)
        merchant.consumptionAnswersWaiting(0, oldestAgeSeconds: 0)
        merchant.reconcilePage(job: "apple")
        merchant.reconcileItems(job: "apple", outcome: "new", count: 1)
        merchant.reconcileRateLimited(job: "apple")
        merchant.reconcileRun(job: "apple", outcome: "ok")
        merchant.sileoRejected(vendor: "/sileo/dev", reason: "invalid_sileo_token")
        merchant.sileoDownload(vendor: "/sileo/dev", delivery: "file")
        merchant.purchaseReported(store: "google", outcome: "applied")
        merchant.playAcknowledgement(.queued)
        merchant.playAcknowledgementsPending(1, oldestAgeSeconds: 30)
        merchant.purchaseRefreshed(store: "apple", trigger: "at_risk", outcome: "changed")
        merchant.atRiskPass(due: 3, deferred: 1)
        merchant.refundReview(outcome: "answered")
        merchant.refundReviewsWaiting(1, oldestAgeSeconds: 60)
        merchant.appAccountToken(outcome: "set")
        merchant.appAccountTokensWaiting(0)
        let play = PlayAPIMetrics(factory: factory)
        play.requestDuration(.subscription, .milliseconds(20))
        play.error(.subscription, kind: "timeout")
        let appStore = AppStoreAPIMetrics(factory: factory)
        appStore.requestDuration(.transactionInfo, .milliseconds(30))
        appStore.error(.transactionInfo, kind: "rate_limited")
        merchant.checkoutStarted(provider: "citcon", outcome: "created")
        merchant.checkoutNotification(provider: "citcon", outcome: "paid")
        merchant.checkoutsExpired(1)
        merchant.checkoutsPruned(1)
        merchant.checkoutRefund(outcome: "requested")
        merchant.checkoutPaymentQuarantined(provider: "citcon", reason: "amount_mismatch")
        let antom = AntomAPIMetrics(factory: factory)
        antom.requestDuration(.pay, .milliseconds(40))
        antom.error(.pay, kind: "timeout")
        let webhooks = WebhookMetrics(factory: factory)
        webhooks.attempt(endpoint: "backend", outcome: .delivered, seconds: 0.02)
        webhooks.parked(endpoint: "backend")
        webhooks.disabledForFailing(endpoint: "backend")
        webhooks.state(endpoint: "backend", pending: 1, parked: 1, oldestPendingSeconds: 3, enabled: true)
        let console = ConsoleMetrics(factory: factory)
        console.rejected(reason: "csrf_token_invalid")
        console.signIn(outcome: "signed_in")
        console.historyPruned(2)
        console.action("dead_letter.replay", outcome: "done")
        console.auditPublishFailed()
        console.metricsReadFailed(source: "gateway-1")

        let exposed = ExposedFamilies(registry.emitToString())
        #expect(exposed.all == Dictionary(uniqueKeysWithValues: WorkerMetrics.all.map { ($0.name, $0.kind) }))
        #expect(exposed.help == Dictionary(uniqueKeysWithValues: WorkerMetrics.all.map { ($0.name, $0.help) }))
        #expect(WorkerMetrics.all.allSatisfy { !$0.help.isEmpty })
    }
}
