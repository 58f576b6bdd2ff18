import Config
import Entitlements
import Events
import Foundation
import Hummingbird
import Kafka
import Logging
import ProviderAPIs
import ServiceHost
import Toolkit
import Verifiers


/// The merchant features of the workers process, composed from their setups around the process's store
/// and producer: the HTTP APIs (entitlements, support, purchases, `/v1/validate`, checkouts, Sileo), what
/// the projection runs for them per event (consumption answers, checkout matching) and their background
/// jobs. `EntitlementWorkers` builds one and places its parts.
public struct MerchantFeatures: Sendable {
    public let api: EntitlementAPI
    public let purchases: PurchasesAPI
    public let validate: ValidateAPI
    /// `POST /v1/purchases/{purchase}/refresh`, and the refresher the at-risk refresh shares.
    public let refresh: RefreshAPI
    /// Every merchant HTTP API: a new one adds its group here.
    public let routes: RouteGroup
    public let purchaseIds: PurchaseIds
    public let catalog: CatalogSettings
    /// Apple consumption requests queued as the projection meets them (nil: none answered); `jobs` answers them.
    public let consumption: ConsumptionAnswerer?
    /// Google refund reviews queued as the projection meets them (nil: no package answers them); `jobs` answers them.
    public let refundReviews: RefundReviewAnswerer?
    /// Provider notifications matched to checkouts as the projection meets them (nil: no checkouts).
    public let checkoutMatcher: CheckoutMatcher?
    /// The background jobs, in the order they stop; all stop before the producer closes.
    public let jobs: [StopOrder.Step]

    public init(store: EntitlementStore, producer: KafkaProducer, eventsTopic: String, apiTokens: [APIToken], merchantAPI: MerchantAPISetup,
                purchases: PurchasesSetup, consumption: ConsumptionAnswering?, playAPI: GooglePlayEnricher?,
                appleBackfill: AppleBackfillSetup?, googleBackfill: GoogleBackfillSetup?,
                playAcknowledgementRetry: PlayAcknowledgementRetryLoop?, sileo: [SileoVendor], sileoCheckouts: (any CheckoutStarting)?,
                checkouts: CheckoutSetup?, refresh: RefreshSetup = RefreshSetup(), refundReviews: RefundReviewSetup? = nil,
                appAccountTokens: AppAccountTokenSetup? = nil, processedEvents: ProcessedEvents? = nil,
                clock: @escaping @Sendable () -> Int64,
                metrics: MerchantMetrics, logger: Logger) {
        let credentials = APICredentials(tokens: apiTokens, userTokenKeys: merchantAPI.userTokenKeys, ratePerSecond: merchantAPI.ratePerSecond,
                                         rateBurst: merchantAPI.rateBurst, clientStoreCallsPerSecond: merchantAPI.clientStoreCallsPerSecond,
                                         clientStoreCallBurst: merchantAPI.clientStoreCallBurst, now: clock)
        let purchaseIds = store.purchaseIds
        let catalog = merchantAPI.catalog
        let api = EntitlementAPI(store: store, credentials: credentials, purchaseIds: purchaseIds, catalog: catalog, metrics: metrics, logger: logger)
        let answerer = consumption.map {
            ConsumptionAnswerer(apps: $0.apps, store: store, metrics: metrics, logger: logger, now: { Timestamp.now.millisecondsSince1970 },
                                firstRetryMs: $0.firstRetryMs)
        }
        self.consumption = answerer
        let reviewAnswerer = refundReviews.flatMap { setup in
            playAPI.map { RefundReviewAnswerer(policies: setup.policies, client: $0.client, store: store, retryDelaysMs: setup.retryDelaysMs,
                                               metrics: metrics, logger: logger, now: clock) }
        }
        self.refundReviews = reviewAnswerer
        let publisher = KafkaEventPublisher(producer: producer, topic: eventsTopic)
        let checkoutService = checkouts.map {
            CheckoutService(setup: $0, store: store, metrics: metrics, logger: logger, now: clock,
                            publisher: publisher)
        }
        checkoutMatcher = checkoutService.map { CheckoutMatcher(records: $0.records, providers: $0.providers, metrics: metrics, logger: logger, now: clock) }
        var purchaseService = PurchaseService(verifiers: purchases.verifiers, store: store, publisher: publisher,
                                              settings: purchases.settings, acknowledger: purchases.acknowledger, metrics: metrics, logger: logger)
        let tokens = appAccountTokens.flatMap { setup in
            setup.clients.isEmpty ? nil : AppAccountTokens(clients: setup.clients, store: store, retryDelaysMs: setup.retryDelaysMs,
                                                           metrics: metrics, logger: logger, now: clock)
        }
        purchaseService.appAccountTokens = tokens
        purchaseService.processedEvents = processedEvents
        let purchasesAPI = PurchasesAPI(service: purchaseService, credentials: credentials, purchaseIds: purchaseIds, catalog: catalog,
                                        metrics: metrics, logger: logger)
        let validateAPI = ValidateAPI(service: purchaseService, purchaseIds: purchaseIds, credentials: credentials,
                                      keys: purchases.settings.validatorKeys, metrics: metrics, logger: logger)
        let sileoAPIs = sileo.map { SileoAPI(vendor: $0, store: store, checkouts: sileoCheckouts ?? checkoutService, metrics: metrics, logger: logger, now: clock) }
        let support = SupportAPI(store: store, credentials: credentials, purchaseIds: purchaseIds, metrics: metrics, logger: logger)
        let quota = StoreQuota(playQueriesPerMinute: refresh.playQueriesPerMinute, appleRequestsPerSecond: refresh.appleRequestsPerSecond)
        let refresher = PurchaseRefresher(service: purchaseService, metrics: metrics, logger: logger)
        let refreshAPI = RefreshAPI(refresher: refresher, store: store, quota: quota, credentials: credentials, metrics: metrics, logger: logger)
        routes = RouteGroup.combined([api.routes, support.routes, purchasesAPI.routes, refreshAPI.routes, validateAPI.routes]
            + sileoAPIs.map { $0.routes }
            + (checkoutService.map { [CheckoutAPI(service: $0, credentials: credentials, catalog: catalog, metrics: metrics, logger: logger).routes] } ?? []))

        var jobs: [StopOrder.Step] = []
        if let appleBackfill {
            // Before the producer: a page in hand is published before it closes.
            let backfill = AppleNotificationBackfill(clients: appleBackfill.clients, apps: appleBackfill.apps, source: appleBackfill.source,
                                                     store: store, publisher: publisher,
                                                     firstRunDays: appleBackfill.firstRunDays, metrics: metrics, logger: logger)
            jobs.append(.stop("apple backfill", ReconcileJob.apple(backfill, interval: appleBackfill.interval, startsNow: appleBackfill.startsNow,
                                                                   logger: logger)))
        }
        if let googleBackfill, let playAPI, !googleBackfill.packages.isEmpty {
            let backfill = GoogleVoidedPurchasesBackfill(client: playAPI.client, packages: googleBackfill.packages, store: store,
                                                         publisher: publisher, metrics: metrics, logger: logger, quota: quota)
            jobs.append(.stop("google voided purchases", ReconcileJob.google(backfill, interval: googleBackfill.interval,
                                                                             startsNow: googleBackfill.startsNow, logger: logger)))
        }
        if let interval = refresh.interval {
            jobs.append(.stop("at-risk refresh", AtRiskRefresh(refresher: refresher, store: store, quota: quota, interval: interval,
                                                               spacingMs: refresh.spacingMs, metrics: metrics, logger: logger, now: clock)))
        }
        if let answerer, let interval = consumption?.interval {
            // Needs only the store and Apple; a request in hand at shutdown is answered by the next start.
            jobs.append(.stop("consumption answers", PeriodicJob(name: "consumption answers", interval: interval, logger: logger) {
                try await answerer.answerDue()
            }))
        }
        if let tokens {
            // Needs only the store and Apple; a call in hand at shutdown is made by the next start.
            jobs.append(.stop("app account tokens", PeriodicJob(name: "app account tokens", interval: .seconds(1), logger: logger) {
                try await tokens.setDue()
            }))
        }
        if let reviewAnswerer {
            // Needs only the store and Google; a review in hand at shutdown is answered by the next start.
            jobs.append(.stop("refund reviews", PeriodicJob(name: "refund reviews", interval: .seconds(1), logger: logger) {
                try await reviewAnswerer.answerDue()
            }))
        }
        if let playAcknowledgementRetry {
            // Needs only the store and Google; an attempt in flight at shutdown is queued or retried next time.
            jobs.append(.stop("play acknowledgements", playAcknowledgementRetry))
        }
        if let checkoutService {
            jobs.append(.stop("checkout expiry sweeper", CheckoutExpirySweeper(records: checkoutService.records, metrics: metrics,
                                                                               logger: logger, now: clock,
                                                                               retentionDays: checkoutService.setup.settings.retentionDays)))
        }
        self.api = api
        self.purchases = purchasesAPI
        self.validate = validateAPI
        self.refresh = refreshAPI
        self.purchaseIds = purchaseIds
        self.catalog = catalog
        self.jobs = jobs
    }
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

    public static func make(config: TollgateConfig) throws(ConfigError) -> MerchantAPISetup {
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

/// Apple's account tokens (`sources.apple.apps[].setAppAccountToken`): the enabled apps' App Store Server API
/// clients, and the retry tiers' delays a failed call is tried again on (`kafka.retryDelaysMs`).
public struct AppAccountTokenSetup: Sendable {
    public var clients: [String: AppStoreAPIClient]
    public var retryDelaysMs: [Int]

    public init(clients: [String: AppStoreAPIClient], retryDelaysMs: [Int]) {
        self.clients = clients
        self.retryDelaysMs = retryDelaysMs
    }

    /// The apps of `settings` with `setAppAccountToken`, with their clients (the config requires each a key).
    public init(settings: AppleSettings, clients: [String: AppStoreAPIClient], retryDelaysMs: [Int]) {
        let enabled = Set(settings.apps.filter(\.setAppAccountToken).map(\.bundleId))
        self.init(clients: clients.filter { enabled.contains($0.key) }, retryDelaysMs: retryDelaysMs)
    }
}

/// Google's refund reviews (`sources.google.refundReviews`): each package's policy, and the retry tiers'
/// delays a failed answer is tried again on (`kafka.retryDelaysMs`).
public struct RefundReviewSetup: Sendable {
    public var policies: [GoogleSettings.RefundReviewPolicy]
    public var retryDelaysMs: [Int]

    public init(policies: [GoogleSettings.RefundReviewPolicy], retryDelaysMs: [Int]) {
        self.policies = policies
        self.retryDelaysMs = retryDelaysMs
    }
}

/// The at-risk refresh (`workers.refresh*`): how often it looks (nil: never), how long between two reads
/// of one purchase, and each store's share of quota that it and `POST /v1/purchases/{purchase}/refresh` spend.
public struct RefreshSetup: Sendable {
    public var interval: Duration?
    public var spacingMs: Int64
    public var playQueriesPerMinute: Int
    public var appleRequestsPerSecond: Int

    public init(interval: Duration? = nil, spacingMs: Int64 = 900_000, playQueriesPerMinute: Int = 1_000, appleRequestsPerSecond: Int = 10) {
        self.interval = interval
        self.spacingMs = spacingMs
        self.playQueriesPerMinute = playQueriesPerMinute
        self.appleRequestsPerSecond = appleRequestsPerSecond
    }

    public init(settings: WorkerSettings) {
        self.init(interval: settings.refreshIntervalSeconds > 0 ? .seconds(settings.refreshIntervalSeconds) : nil,
                  spacingMs: Int64(settings.refreshSpacingSeconds) * 1_000, playQueriesPerMinute: settings.refreshPlayQueriesPerMinute,
                  appleRequestsPerSecond: settings.refreshAppleRequestsPerSecond)
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
    /// The first run at start, not after the interval (`--reconcile-now`).
    public let startsNow: Bool

    public init(clients: [String: AppStoreAPIClient], apps: [AppleSettings.App], source: any WebhookSource, firstRunDays: Int,
                interval: Duration, startsNow: Bool = false) {
        self.clients = clients
        self.apps = apps
        self.source = source
        self.firstRunDays = firstRunDays
        self.interval = interval
        self.startsNow = startsNow
    }
}

/// The Google voided purchases job: the packages it polls (with the Play Developer API client the
/// enrichment uses, so it runs only when `sources.google.playApi.credentialsFile` is set).
public struct GoogleBackfillSetup: Sendable {
    public let packages: [String]
    public let interval: Duration
    /// The first run at start, not after the interval (`--reconcile-now`).
    public let startsNow: Bool

    public init(packages: [String], interval: Duration, startsNow: Bool = false) {
        self.packages = packages
        self.interval = interval
        self.startsNow = startsNow
    }
}
