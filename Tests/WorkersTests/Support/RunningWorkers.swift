import Config
import Console
import Entitlements
import Events
import Gateway
import Logging
import Merchant
import ProviderAPIs
import ServiceLifecycle
import Webhooks
import Synchronization
import Workers

/// One worker instance as `tollgate work` runs it: `EntitlementWorkers` (its own producer and
/// consumers in the harness's consumer group) in a ServiceGroup, counting into metrics of its own.
/// The store is the test's: the instance leaves it open.
final class RunningWorkers: Sendable {
    let workers: EntitlementWorkers
    let metrics = RecordingMetrics()
    private let group: ServiceGroup
    private let running: Task<Void, any Error>
    private let listening: ListeningPort

    /// `clock`: the expiry sweeper's time, with ends noticed within `expiryPublishDelayMs` of it.
    /// `consumption`: the apps whose consumption requests the instance answers; `playAPI`: the Play
    /// enrichment (Google events confirmed against a local Google), none by default.
    init(harness: WorkerHarness, store: EntitlementStore, expiryPublishDelayMs: Int = 60_000,
         clock: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
         consumption: ConsumptionAnswering? = nil, playAPI: GooglePlayEnricher? = nil,
         purchases: EntitlementWorkers.PurchasesSetup = .init(verifiers: []), apiTokens: [APIToken] = [],
         sileo: [SileoVendor] = [], sileoCheckouts: (any CheckoutStarting)? = nil, checkouts: CheckoutSetup? = nil, ownServer: Bool = false, serverPort: Int = 0,
         merchantAPI: MerchantAPISetup = MerchantAPISetup(), refundReviews: RefundReviewSetup? = nil,
         appAccountTokens: AppAccountTokenSetup? = nil, console: ConsoleSetup? = nil, webhooks: WebhookSetup? = nil,
         senderSettings: SourcesSettings? = nil) throws {
        let listening = ListeningPort()
        self.listening = listening
        // With `ownServer`, the workers' own HTTP server on a free loopback port, as `tollgate work` runs it.
        let listener: EntitlementWorkers.APIListener = ownServer
            ? .own(host: "127.0.0.1", port: serverPort, exposition: { "" }, onListening: { [listening] port in listening.port.withLock { $0 = port } })
            : .elsewhere
        workers = try EntitlementWorkers(client: harness.client, topics: harness.topics, consumerGroup: WorkerHarness.consumerGroup,
                                         store: store, playAPI: playAPI, consumption: consumption, apiTokens: apiTokens, listener: listener,
                                         expiryPublishDelayMs: expiryPublishDelayMs, purchases: purchases, sileo: sileo, sileoCheckouts: sileoCheckouts, clock: clock, checkouts: checkouts,
                                         merchantAPI: merchantAPI, webhooks: webhooks, refundReviews: refundReviews, appAccountTokens: appAccountTokens,
                                         console: console, senderSettings: senderSettings, metrics: WorkerMetrics(factory: metrics),
                                         logger: harness.logger)
        group = ServiceGroup(services: [workers], logger: harness.logger)
        running = Task { [group] in try await group.run() }
    }

    /// The base URL of the workers' own server (`ownServer`), once it listens.
    func baseURL() async throws -> String {
        try await waitUntil("the workers' server listens") { listening.port.withLock { $0 } != nil }
        return "http://127.0.0.1:\(listening.port.withLock { $0 } ?? 0)"
    }

    /// A graceful shutdown, as on SIGTERM: the batch in hand is finished and committed, the group is left.
    /// Safe to call again.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
    }
}

/// The port the workers' own server bound, once it has.
final class ListeningPort: Sendable {
    let port = Mutex<Int?>(nil)
}
