import Config
import Console
import Entitlements
import Events
import Foundation
import Kafka
import Logging
import Merchant
import ProviderAPIs
import ServiceHost
import ServiceLifecycle
import Store
import Toolkit
import Verifiers
import Webhooks

/// The workers process, composed: the projection of `tollgate.events`, the retry tiers and the outbox
/// relay, sharing one store and one producer (retries, dead letters, entitlements), and in `tollgate
/// work` the HTTP server of the entitlement API; run as one ServiceGroup. `tollgate work` runs it
/// alone, `tollgate dev` beside the gateway (whose server then carries the API), and the worker tests
/// start it as it is.
public struct EntitlementWorkers: Service {
    /// Where the entitlement API is served.
    public enum APIListener: Sendable {
        /// On another server, which registers `api` (the gateway's in `tollgate dev`).
        case elsewhere
        /// On a server of the workers' own, with `/healthz`, `/readyz` (the store answers) and `/metrics`
        /// (`exposition`); `onListening` receives the bound port. With `metrics` (`metrics.port`),
        /// `/metrics` is served on a listener of its own there instead.
        case own(host: String, port: Int, exposition: @Sendable () -> String, onListening: @Sendable (Int) async -> Void,
                 metrics: MetricsListener? = nil)
    }

    /// `/metrics` on its own listener (`metrics.port`); `onListening` receives its bound port.
    public struct MetricsListener: Sendable {
        public let host: String
        public let port: Int
        public let onListening: @Sendable (Int) async -> Void

        public init(host: String, port: Int, onListening: @escaping @Sendable (Int) async -> Void) {
            self.host = host
            self.port = port
            self.onListening = onListening
        }
    }

    public let store: EntitlementStore
    public let producer: KafkaProducer
    public let api: EntitlementAPI
    public let purchases: PurchasesAPI
    public let validate: ValidateAPI
    public let refresh: RefreshAPI
    /// Every HTTP API the workers serve (the entitlement API, purchases, checkouts, Sileo): on their own
    /// server in `tollgate work`, on the gateway's in `tollgate dev`. A new API adds its group here.
    public let routes: RouteGroup
    /// What graceful shutdown does, in order.
    public let stopOrder: StopOrder
    private let logger: Logger

    /// Composed from the configuration, as `tollgate work` and `tollgate dev` run it: the store opened
    /// at `store.url` (and closed last), the Play Developer API client when credentials are configured
    /// (`playAPIFetcher` makes its calls, and the App Store Server API's when an app answers consumption requests).
    public typealias MerchantAPISetup = Merchant.MerchantAPISetup
    public typealias PurchasesSetup = Merchant.PurchasesSetup
    public typealias AppleBackfillSetup = Merchant.AppleBackfillSetup
    public typealias GoogleBackfillSetup = Merchant.GoogleBackfillSetup
    public typealias RefreshSetup = Merchant.RefreshSetup
    public typealias RefundReviewSetup = Merchant.RefundReviewSetup
    public typealias AppAccountTokenSetup = Merchant.AppAccountTokenSetup

    public static func open(config: TollgateConfig, kafka: KafkaClientConfig, metrics: WorkerMetrics, playAPIFetcher: any HTTPFetcher,
                            listener: APIListener, reconcileNow: Bool = false, localMetrics: (@Sendable () -> String)? = nil,
                            logger: Logger) async throws -> EntitlementWorkers {
        // The receipt roots are read first, so an unreadable file stops the start, naming its key, before anything opens.
        guard let receipts = AppReceiptVerifier(roots: try AppReceiptRoots.load(paths: config.purchases.receiptRootCertificates),
                                                maxBase64Bytes: config.purchases.maxReceiptBytes) else {
            throw ConfigError(key: AppReceiptRoots.key, message: "OpenSSL could not make a trust store of these roots")
        }
        let store = try await EntitlementStore.open(url: config.store.url, logger: logger)
        logger.info("entitlement store open", metadata: ["store": .string(store.database.redactedURL)])
        if config.api.tokens.allSatisfy({ $0.kind == .operator }) {
            logger.warning("no api.tokens configured: the entitlement API refuses every call", metadata: ["key": "api.tokens"])
        }
        let enricher = try GooglePlayEnricher(settings: config.sources.google.playApi, fetcher: playAPIFetcher, logger: logger)
        // One App Store Server API client per app with a key, shared by the consumption answers and the
        // backfill. Keys are read now, so a missing .p8 stops the start with its path.
        let appStoreClients = try AppStoreAPIClients.make(settings: config.sources.apple, fetcher: playAPIFetcher, logger: logger,
                                                          metricsFactory: metrics.factory)
        let consumption = ConsumptionAnswering(settings: config.sources.apple, clients: appStoreClients)
        for warning in SenderCatalog.standard.startupWarnings(config.sources, process: .workers) {
            logger.warning("\(warning.message)", metadata: ["key": "\(warning.key)"])
        }
        let appleBackfill = try appleBackfill(config: config, clients: appStoreClients, startsNow: reconcileNow)
        let merchantMetrics = MerchantMetrics(factory: metrics.factory)
        let google = GooglePurchases.make(settings: config.sources.google, enricher: enricher, store: store, metrics: merchantMetrics, logger: logger)
        let purchases = PurchasesSetup(
            verifiers: [ApplePurchaseVerifier(source: try AppleSource(settings: config.sources.apple, fetcher: playAPIFetcher),
                                              clients: appStoreClients, receipts: receipts, logger: logger),
                        google.verifier],
            settings: config.purchases, acknowledger: google.acknowledger)
        let checkouts = try CheckoutSetup.make(config: config, fetcher: playAPIFetcher)
        let sileo = try config.sileo.vendors.map { (vendor) throws(SileoVendor.SetupError) in try SileoVendor.load(vendor, checkouts: checkouts) }
        let merchantAPI = try MerchantAPISetup.make(config: config)
        var console = try ConsoleSetup.make(settings: config.console, operators: config.api.operators)
        console?.metricsSources = Self.metricsSources(config.console.gatewayMetrics, local: localMetrics, fetcher: playAPIFetcher)
        return try EntitlementWorkers(client: kafka, topics: config.topicNames,
                                      consumerGroup: config.kafka.consumerGroup, ackTimeoutMs: config.kafka.ackTimeoutMs,
                                      store: store, closesStore: true, playAPI: enricher, consumption: consumption, apiTokens: config.api.tokens, listener: listener,
                                      expiryPublishDelayMs: config.workers.expiryPublishDelayMs, appleBackfill: appleBackfill,
                                      googleBackfill: config.workers.reconcileGoogleIntervalSeconds > 0
                                          ? GoogleBackfillSetup(packages: config.sources.google.packages,
                                                                interval: .seconds(config.workers.reconcileGoogleIntervalSeconds), startsNow: reconcileNow)
                                          : nil,
                                      purchases: purchases, playAcknowledgementRetry: google.retryLoop, sileo: sileo, checkouts: checkouts,
                                      merchantAPI: merchantAPI, webhooks: try WebhookSetup(settings: config.webhooks),
                                      refresh: RefreshSetup(settings: config.workers),
                                      refundReviews: config.sources.google.refundReviews.isEmpty ? nil
                                          : RefundReviewSetup(policies: config.sources.google.refundReviews, retryDelaysMs: config.topicNames.retryDelaysMs),
                                      appAccountTokens: AppAccountTokenSetup(settings: config.sources.apple, clients: appStoreClients,
                                                                             retryDelaysMs: config.topicNames.retryDelaysMs),
                                      console: console, senderSettings: config.sources, metrics: metrics, logger: logger)
    }

    /// The console overview's sources: this process's registry, then each gateway replica's `/metrics` (at most 4 MiB, 3 s).
    static func metricsSources(_ urls: [String], local: (@Sendable () -> String)?, fetcher: any HTTPFetcher) -> [MetricsSource] {
        var sources = local.map { read in [MetricsSource(name: "local") { read() }] } ?? []
        for (index, url) in urls.enumerated() {
            sources.append(MetricsSource(name: "gateway-\(index + 1)") {
                let response = try await fetcher.fetch(HTTPFetchRequest(url: url, timeout: .seconds(3), maxResponseBytes: 4 << 20))
                guard response.status == 200 else { throw HTTPFetchError("status \(response.status)") }
                return String(decoding: response.body, as: UTF8.self)
            })
        }
        return sources
    }

    static func appleBackfill(config: TollgateConfig, clients: [String: AppStoreAPIClient], startsNow: Bool) throws -> AppleBackfillSetup? {
        guard config.workers.reconcileAppleIntervalSeconds > 0, !clients.isEmpty else { return nil }
        let source = try SenderCatalog.standard.offlineSource(named: SourceName.apple.rawValue, settings: config.sources)
        return AppleBackfillSetup(clients: clients, apps: config.sources.apple.apps, source: source,
                                  firstRunDays: config.workers.reconcileAppleFirstRunDays,
                                  interval: .seconds(config.workers.reconcileAppleIntervalSeconds), startsNow: startsNow)
    }

    /// `consumption`: the apps whose Apple consumption requests are answered (nil: none answered or counted).
    /// `closesStore`: whether the store is closed once everything else has stopped (false when the
    /// caller owns it, as the tests that run two instances on one store do). `clock` is the time the
    /// expiry sweeper and the Sileo API compare ends with (tests move it by hand). `sileo`: the Sileo vendors served
    /// (docs/sileo.md), whose purchases start checkouts through `sileoCheckouts` (tests), else the checkouts
    /// of `checkouts` (none: purchases answer 503). `checkouts`: `POST /v1/checkouts`, the matching of
    /// provider notifications to checkouts and their expiry (nil: none served).
    /// `playAcknowledgementRetry`: the loop that retries the Play acknowledgements `purchases`' acknowledger queued (`GooglePurchases`).
    /// `senderSettings`: what the console verifies a raw delivery again with (nil: it refuses to).
    public init(client: KafkaClientConfig, topics: TopicNames, consumerGroup: String, ackTimeoutMs: Int = 5_000,
                store: EntitlementStore, closesStore: Bool = false, playAPI: GooglePlayEnricher? = nil,
                consumption: ConsumptionAnswering? = nil,
                apiTokens: [APIToken] = [], listener: APIListener = .elsewhere, expiryPublishDelayMs: Int = 60_000,
                appleBackfill: AppleBackfillSetup? = nil, googleBackfill: GoogleBackfillSetup? = nil,
                purchases: PurchasesSetup = PurchasesSetup(verifiers: []),
                playAcknowledgementRetry: PlayAcknowledgementRetryLoop? = nil,
                sileo: [SileoVendor] = [], sileoCheckouts: (any CheckoutStarting)? = nil,
                clock: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
                checkouts: CheckoutSetup? = nil, merchantAPI: MerchantAPISetup = MerchantAPISetup(),
                webhooks: WebhookSetup? = nil, refresh: RefreshSetup = RefreshSetup(), refundReviews: RefundReviewSetup? = nil,
                appAccountTokens: AppAccountTokenSetup? = nil, console consoleSetup: ConsoleSetup? = nil,
                senderSettings: SourcesSettings? = nil,
                metrics: WorkerMetrics, logger: Logger) throws(KafkaError) {
        let producer = try KafkaProducer(config: ProducerConfig(client: client, deliveryTimeoutMs: ackTimeoutMs))
        // The projection tells the purchase requests of this process it applied their events: no polling.
        let processedEvents = ProcessedEvents()
        let merchant = MerchantFeatures(store: store, producer: producer, eventsTopic: topics.events, apiTokens: apiTokens,
                                        merchantAPI: merchantAPI, purchases: purchases, consumption: consumption, playAPI: playAPI,
                                        appleBackfill: appleBackfill, googleBackfill: googleBackfill,
                                        playAcknowledgementRetry: playAcknowledgementRetry, sileo: sileo, sileoCheckouts: sileoCheckouts,
                                        checkouts: checkouts, refresh: refresh, refundReviews: refundReviews,
                                        appAccountTokens: appAccountTokens, processedEvents: processedEvents, clock: clock,
                                        metrics: MerchantMetrics(factory: metrics.factory), logger: logger)
        var processor = EventProcessor(store: store, enricher: playAPI, metrics: metrics, logger: logger)
        let ownership = purchases.settings
        processor.ownership = { app in ownership.ownership(of: app) == .keep ? .keep : .transfer }
        processor.consumption = merchant.consumption
        processor.refundReviews = merchant.refundReviews
        processor.checkouts = merchant.checkoutMatcher
        let wakeup = WebhookWakeup()
        if let webhooks, webhooks.endpoints.contains(where: { $0.kind == .events }) {
            processor.appliedEvents = WebhookOutbox(endpoints: webhooks.endpoints, wakeup: wakeup)
        }
        // The console's purchase pages read each purchase's history, which the projection keeps while there is one.
        let console = consoleSetup.map { setup in
            OperatorConsole(setup: setup, store: store,
                            operations: WorkerConsoleOperations(client: client, topics: topics, store: store, producer: producer, refresh: merchant.refresh,
                                                                endpointList: webhooks?.endpoints ?? [], senderSettings: senderSettings,
                                                                now: clock),
                            metrics: ConsoleMetrics(factory: metrics.factory), logger: logger, now: clock)
        }
        processor.keepsHistory = console != nil
        processor.processedEvents = processedEvents
        if console != nil { store.keepStoreCalls() }
        let handler = RecordHandler(processor: processor, router: FailureRouter(topics: topics, consumerGroup: consumerGroup),
                                    producer: producer, metrics: metrics, logger: logger)
        let consumer = ConsumerConfig(client: client, groupId: consumerGroup)
        // The projection's records are what a reported purchase's answer waits for.
        let projection = ConsumerConfig(client: client, groupId: consumerGroup, fetchWaitMs: ConsumerConfig.answeringWaitMs(client))
        let routes = RouteGroup.combined([merchant.routes] + (console.map { [$0.routes] } ?? []))

        var steps: [StopOrder.Step] = []
        if case .own(let host, let port, let exposition, let onListening, let metricsListener) = listener {
            let server = WorkerServer(host: host, port: port, routes: routes, store: store,
                                      exposition: metricsListener == nil ? exposition : nil, logger: logger)
            // The API stops answering first: nothing after it serves HTTP.
            steps.append(.stop("http server", server.makeApplication(onListening: onListening)))
            if let metricsListener {
                let metricsServer = MetricsServer(host: metricsListener.host, port: metricsListener.port, exposition: exposition, logger: logger)
                steps.append(.stop("metrics server", metricsServer.makeApplication(onListening: metricsListener.onListening)))
            }
        }
        steps += merchant.jobs
        if let console { steps.append(.stop("purchase history pruning", console.historyPruning)) }
        if let sampling = console?.metricsSampling { steps.append(.stop("console metrics sampling", sampling)) }
        if let webhooks, !webhooks.endpoints.isEmpty {
            // Before the consumers: what it has in flight finishes, then the projection stops recording.
            steps.append(.stop("webhook dispatcher", WebhookDispatcher(
                endpoints: webhooks.endpoints, settings: webhooks.settings, store: WebhookStore(store: store),
                purchaseIds: merchant.purchaseIds, catalog: merchant.catalog,
                wakeup: wakeup,
                metrics: WebhookMetrics(factory: metrics.factory), logger: logger, resolver: webhooks.resolver)))
        }
        steps += [
            // Before the relay, so the relay's last pass publishes what the last sweep queued.
            .stop("expiry sweeper", ExpirySweeper(store: store, delayMs: expiryPublishDelayMs, metrics: metrics, logger: logger, now: clock)),
            .stop("outbox relay", OutboxRelay(store: store, producer: producer, topic: topics.entitlements, purchaseIds: merchant.purchaseIds,
                                                 catalog: merchant.catalog, metrics: metrics, logger: logger)),
            // Each consumer finishes and commits the batch in hand, then leaves the group.
            .stop("retry tiers", RetryService(config: consumer, topics: topics.retryDelaysMs.map(topics.retry(delayMs:)), handler: handler,
                                              logger: logger)),
            .stop("projection", ProjectionService(config: projection, topic: topics.events, handler: handler, logger: logger)),
        ]
        if let webhooks, let forwarding = WebhookForwarding(endpoints: webhooks.endpoints, retentionDays: webhooks.settings.retentionDays,
                                                                  store: store, wakeup: wakeup) {
            // A group of its own: it reads every raw topic, each record once for all forward endpoints.
            steps.append(.stop("webhook forwarding", ForwardingService(
                config: ConsumerConfig(client: client, groupId: consumerGroup + ".webhook-forwarding"),
                senders: Dictionary(uniqueKeysWithValues: topics.sources.map { (topics.raw($0), $0) }),
                forwarding: forwarding, metrics: metrics, logger: logger, clock: clock)))
        }
        if console != nil {
            // A group of its own: where each raw delivery is, by its events, for the purchases' stories.
            steps.append(.stop("raw delivery index", RawDeliveryIndex(
                config: ConsumerConfig(client: client, groupId: consumerGroup + ".console-raw-index"),
                senders: Dictionary(uniqueKeysWithValues: topics.sources.map { (topics.raw($0), $0) }),
                store: store, metrics: metrics, logger: logger, clock: clock)))
        }
        steps += [
            // Flushes what the consumers sent to the retry and dead-letter topics and the relay to the entitlements topic.
            .close("kafka producer") { await producer.drainAndClose(flushTimeoutMs: 10_000) },
        ]
        if closesStore { steps.append(.close("store") { await store.close() }) }

        self.store = store
        self.producer = producer
        self.api = merchant.api
        self.purchases = merchant.purchases
        self.validate = merchant.validate
        self.refresh = merchant.refresh
        self.routes = routes
        self.stopOrder = StopOrder(steps)
        self.logger = logger
    }

    public func run() async throws {
        try await stopOrder.serviceGroup(logger: logger).run()
    }
}

