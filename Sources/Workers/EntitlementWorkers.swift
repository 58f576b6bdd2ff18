import Config
import Entitlements
import Foundation
import Events
import Kafka
import Logging
import ServiceHost
import ServiceLifecycle
import Store
import Senders
import Toolkit

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
    /// Every HTTP API the workers serve (the entitlement API, purchases, checkouts, Sileo): on their own
    /// server in `tollgate work`, on the gateway's in `tollgate dev`. A new API adds its group here.
    public let routes: RouteGroup
    /// What graceful shutdown does, in order.
    public let stopOrder: StopOrder
    private let logger: Logger

    /// Composed from the configuration, as `tollgate work` and `tollgate dev` run it: the store opened
    /// at `store.url` (and closed last), the Play Developer API client when credentials are configured
    /// (`playAPIFetcher` makes its calls, and the App Store Server API's when an app answers consumption requests).
    public static func open(config: TollgateConfig, kafka: KafkaClientConfig, metrics: WorkerMetrics, playAPIFetcher: any HTTPFetcher,
                            listener: APIListener, logger: Logger) async throws -> EntitlementWorkers {
        // The receipt roots are read first, so an unreadable file stops the start, naming its key, before anything opens.
        guard let receipts = AppReceiptVerifier(roots: try AppReceiptRoots.load(paths: config.purchases.receiptRootCertificates),
                                                maxBase64Bytes: config.purchases.maxReceiptBytes) else {
            throw ConfigError(key: AppReceiptRoots.key, message: "OpenSSL could not make a trust store of these roots")
        }
        let store = try await EntitlementStore.open(url: config.store.url, logger: logger)
        logger.info("entitlement store open", metadata: ["store": .string(store.database.redactedURL)])
        if config.api.tokens.isEmpty {
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
        let appleBackfill = try appleBackfill(config: config, clients: appStoreClients)
        let google = GooglePurchases.make(settings: config.sources.google, enricher: enricher, store: store, metrics: metrics, logger: logger)
        let purchases = PurchasesSetup(
            verifiers: [ApplePurchaseVerifier(source: try AppleSource(settings: config.sources.apple, fetcher: playAPIFetcher),
                                              clients: appStoreClients, receipts: receipts, logger: logger),
                        google.verifier],
            settings: config.purchases, acknowledger: google.acknowledger)
        let sileo = try config.sileo.vendors.map(SileoVendor.load)
        let checkouts = try CheckoutSetup.make(config: config, fetcher: playAPIFetcher)
        let merchantAPI = try MerchantAPISetup.make(config: config)
        return try EntitlementWorkers(client: kafka, topics: config.topicNames,
                                      consumerGroup: config.kafka.consumerGroup, ackTimeoutMs: config.kafka.ackTimeoutMs,
                                      store: store, closesStore: true, playAPI: enricher, consumption: consumption, apiTokens: config.api.tokens, listener: listener,
                                      expiryPublishDelayMs: config.workers.expiryPublishDelayMs, appleBackfill: appleBackfill,
                                      googleBackfill: config.workers.reconcileGoogleIntervalSeconds > 0
                                          ? GoogleBackfillSetup(packages: config.sources.google.packages,
                                                                interval: .seconds(config.workers.reconcileGoogleIntervalSeconds))
                                          : nil,
                                      purchases: purchases, playAcknowledgementRetry: google.retryLoop, sileo: sileo, checkouts: checkouts,
                                      merchantAPI: merchantAPI, metrics: metrics, logger: logger)
    }

    /// What the merchant APIs authenticate with beside `api.tokens` (the user token keys, read at start so
    /// a bad key file stops it with its configuration key), their rate, and the catalog.
    public struct MerchantAPISetup: Sendable {
        public var userTokenKeys: [String: PublicKey]
        public var ratePerSecond: Int
        public var rateBurst: Int
        public var clientStoreCallsPerSecond: Int
        public var clientStoreCallBurst: Int
        public var catalog: CatalogSettings

        public init(userTokenKeys: [String: PublicKey] = [:], ratePerSecond: Int = 500, rateBurst: Int = 1_000,
                    clientStoreCallsPerSecond: Int = 50, clientStoreCallBurst: Int = 200, catalog: CatalogSettings = CatalogSettings()) {
            self.userTokenKeys = userTokenKeys
            self.ratePerSecond = ratePerSecond
            self.rateBurst = rateBurst
            self.clientStoreCallsPerSecond = clientStoreCallsPerSecond
            self.clientStoreCallBurst = clientStoreCallBurst
            self.catalog = catalog
        }

        static func make(config: TollgateConfig) throws(ConfigError) -> MerchantAPISetup {
            var keys: [String: PublicKey] = [:]
            for (app, path) in config.api.userTokenKeys {
                guard let data = FileManager.default.contents(atPath: path), let key = PublicKey.load(pemOrDER: Array(data)), key.isP256 else {
                    throw ConfigError(key: "api.userTokenKeys.\(app)", message: "\(path) is not a readable P-256 public key (ES256)")
                }
                keys[app] = key
            }
            return MerchantAPISetup(userTokenKeys: keys, ratePerSecond: config.api.ratePerSecond, rateBurst: config.api.rateBurst,
                                    clientStoreCallsPerSecond: config.api.clientStoreCallsPerSecond,
                                    clientStoreCallBurst: config.api.clientStoreCallBurst, catalog: config.catalog)
        }
    }

    /// What `POST /v1/purchases` verifies claims with, and its settings.
    public struct PurchasesSetup: Sendable {
        public var verifiers: [any PurchaseVerifying]
        public var settings: PurchaseSettings
        /// Google purchases' acknowledgements, once their events are durable.
        public var acknowledger: (any PlayAcknowledging)?

        public init(verifiers: [any PurchaseVerifying], settings: PurchaseSettings = PurchaseSettings(),
                    acknowledger: (any PlayAcknowledging)? = nil) {
            self.verifiers = verifiers
            self.settings = settings
            self.acknowledger = acknowledger
        }
    }

    /// What the Apple backfill job needs, when some app has a `serverApi` key and the job is on: the
    /// API clients and the Apple sender's verification, built at start so a bad key stops the process.
    public struct AppleBackfillSetup: Sendable {
        public let clients: [String: AppStoreAPIClient]
        public let apps: [AppleSettings.App]
        public let source: any WebhookSource
        public let firstRunDays: Int
        public let interval: Duration

        public init(clients: [String: AppStoreAPIClient], apps: [AppleSettings.App], source: any WebhookSource, firstRunDays: Int,
                    interval: Duration) {
            self.clients = clients
            self.apps = apps
            self.source = source
            self.firstRunDays = firstRunDays
            self.interval = interval
        }
    }

    /// The Google voided purchases job: the packages it polls (with the Play Developer API client the
    /// enrichment uses, so it runs only when `sources.google.playApi.credentialsFile` is set).
    public struct GoogleBackfillSetup: Sendable {
        public let packages: [String]
        public let interval: Duration

        public init(packages: [String], interval: Duration) {
            self.packages = packages
            self.interval = interval
        }
    }

    static func appleBackfill(config: TollgateConfig, clients: [String: AppStoreAPIClient]) throws -> AppleBackfillSetup? {
        guard config.workers.reconcileAppleIntervalSeconds > 0, !clients.isEmpty else { return nil }
        let source = try SenderCatalog.standard.offlineSource(named: SourceName.apple.rawValue, settings: config.sources)
        return AppleBackfillSetup(clients: clients, apps: config.sources.apple.apps, source: source,
                                  firstRunDays: config.workers.reconcileAppleFirstRunDays,
                                  interval: .seconds(config.workers.reconcileAppleIntervalSeconds))
    }

    /// `consumption`: the apps whose Apple consumption requests are answered (nil: none answered or counted).
    /// `closesStore`: whether the store is closed once everything else has stopped (false when the
    /// caller owns it, as the tests that run two instances on one store do). `clock` is the time the
    /// expiry sweeper and the Sileo API compare ends with (tests move it by hand). `sileo`: the Sileo vendors served
    /// (docs/sileo.md), whose purchases start checkouts through `sileoCheckouts` (tests), else the checkouts
    /// of `checkouts` (none: purchases answer 503). `checkouts`: `POST /v1/checkouts`, the matching of
    /// provider notifications to checkouts and their expiry (nil: none served).
    /// `playAcknowledgementRetry`: the loop that retries the Play acknowledgements `purchases`' acknowledger queued (`GooglePurchases`).
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
                metrics: WorkerMetrics, logger: Logger) throws(KafkaError) {
        let producer = try KafkaProducer(config: ProducerConfig(client: client, deliveryTimeoutMs: ackTimeoutMs))
        let credentials = APICredentials(tokens: apiTokens, userTokenKeys: merchantAPI.userTokenKeys, ratePerSecond: merchantAPI.ratePerSecond,
                                         rateBurst: merchantAPI.rateBurst, clientStoreCallsPerSecond: merchantAPI.clientStoreCallsPerSecond,
                                         clientStoreCallBurst: merchantAPI.clientStoreCallBurst, now: clock)
        let purchaseIds = PurchaseIdSource(store: store)
        let catalog = merchantAPI.catalog
        let api = EntitlementAPI(store: store, credentials: credentials, purchaseIds: purchaseIds, catalog: catalog, metrics: metrics, logger: logger)
        var processor = EventProcessor(store: store, enricher: playAPI, metrics: metrics, logger: logger)
        let ownership = purchases.settings
        processor.ownership = { app in ownership.ownership(of: app) == .keep ? .keep : .transfer }
        if let consumption {
            processor.consumption = ConsumptionAnswerer(apps: consumption.apps, store: store, metrics: metrics, logger: logger,
                                                        now: { Timestamp.now.millisecondsSince1970 })
        }
        let eventsTopic = topics.events
        let checkoutService = checkouts.map {
            CheckoutService(setup: $0, store: store, metrics: metrics, logger: logger, now: clock,
                            publish: { events in try await producer.sendAll(events.map { CloudEventRecord.message($0, topic: eventsTopic) }) })
        }
        if let checkoutService {
            processor.checkouts = CheckoutMatcher(records: checkoutService.records, metrics: metrics, logger: logger, now: clock)
        }
        let handler = RecordHandler(processor: processor, router: FailureRouter(topics: topics, consumerGroup: consumerGroup),
                                    producer: producer, metrics: metrics, logger: logger)
        let consumer = ConsumerConfig(client: client, groupId: consumerGroup)
        let purchaseService = PurchaseService(verifiers: purchases.verifiers, store: store, producer: producer, topic: topics.events,
                                              settings: purchases.settings, acknowledger: purchases.acknowledger, metrics: metrics, logger: logger)
        let purchasesAPI = PurchasesAPI(service: purchaseService, credentials: credentials, purchaseIds: purchaseIds, catalog: catalog,
                                        metrics: metrics, logger: logger)
        let validateAPI = ValidateAPI(service: purchaseService, purchaseIds: purchaseIds, credentials: credentials, keys: purchases.settings.validatorKeys, metrics: metrics,
                                      logger: logger)
        let sileoAPIs = sileo.map { SileoAPI(vendor: $0, store: store, checkouts: sileoCheckouts ?? checkoutService, metrics: metrics, logger: logger, now: clock) }
        let support = SupportAPI(store: store, credentials: credentials, purchaseIds: purchaseIds, metrics: metrics, logger: logger)
        let routes = RouteGroup.combined([api.routes, support.routes, purchasesAPI.routes, validateAPI.routes] + sileoAPIs.map(\.routes)
            + (checkoutService.map { [CheckoutAPI(service: $0, credentials: credentials, catalog: catalog, metrics: metrics, logger: logger).routes] } ?? []))

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
        if let appleBackfill {
            // Before the producer: a page in hand is published before it closes.
            let backfill = AppleNotificationBackfill(clients: appleBackfill.clients, apps: appleBackfill.apps, source: appleBackfill.source,
                                                     store: store, producer: producer, topic: topics.events,
                                                     firstRunDays: appleBackfill.firstRunDays, metrics: metrics, logger: logger)
            steps.append(.stop("apple backfill", ReconcileJob.apple(backfill, interval: appleBackfill.interval, logger: logger)))
        }
        if let googleBackfill, let playAPI, !googleBackfill.packages.isEmpty {
            let backfill = GoogleVoidedPurchasesBackfill(client: playAPI.client, packages: googleBackfill.packages, store: store,
                                                         producer: producer, topic: topics.events, metrics: metrics, logger: logger)
            steps.append(.stop("google voided purchases", ReconcileJob.google(backfill, interval: googleBackfill.interval, logger: logger)))
        }
        if let playAcknowledgementRetry {
            // Needs only the store and Google; an attempt in flight at shutdown is queued or retried next time.
            steps.append(.stop("play acknowledgements", playAcknowledgementRetry))
        }
        if let checkoutService {
            steps.append(.stop("checkout expiry sweeper", CheckoutExpirySweeper(records: checkoutService.records, metrics: metrics,
                                                                                logger: logger, now: clock,
                                                                                retentionDays: checkoutService.setup.settings.retentionDays)))
        }
        steps += [
            // Before the relay, so the relay's last pass publishes what the last sweep queued.
            .stop("expiry sweeper", ExpirySweeper(store: store, delayMs: expiryPublishDelayMs, metrics: metrics, logger: logger, now: clock)),
            .stop("outbox relay", OutboxRelay(store: store, producer: producer, topic: topics.entitlements, purchaseIds: purchaseIds,
                                                 catalog: catalog, metrics: metrics, logger: logger)),
            // Each consumer finishes and commits the batch in hand, then leaves the group.
            .stop("retry tiers", RetryService(config: consumer, topics: topics.retryDelaysMs.map(topics.retry(delayMs:)), handler: handler,
                                              logger: logger)),
            .stop("projection", ProjectionService(config: consumer, topic: topics.events, handler: handler, logger: logger)),
            // Flushes what the consumers sent to the retry and dead-letter topics and the relay to the entitlements topic.
            .close("kafka producer") { await producer.drainAndClose(flushTimeoutMs: 10_000) },
        ]
        if closesStore { steps.append(.close("store") { await store.close() }) }

        self.store = store
        self.producer = producer
        self.api = api
        self.purchases = purchasesAPI
        self.validate = validateAPI
        self.routes = routes
        self.stopOrder = StopOrder(steps)
        self.logger = logger
    }

    public func run() async throws {
        try await stopOrder.serviceGroup(logger: logger).run()
    }
}
