import Entitlements
import Events
import Kafka
import Logging
import ProviderAPIs
import Verifiers

/// Polls `purchases.voidedpurchases.list` per package of `sources.google.packages` and publishes each
/// voided purchase to `tollgate.events`: a refund made in the Play Console may never come as a
/// notification. Each gets a deterministic id, `google:voidedpurchases:<package>:<purchaseToken>:<voidedTimeMillis>`
/// (a Pub/Sub subscription, the scope of a pushed event's id, always contains `/`, so the two never
/// meet), so a void read again is a duplicate the projection skips; one that also came as a
/// notification is applied a second time as the same end (`unchanged`).
///
/// The type follows the purchase the store knows: `subscription.revoked` for a subscription,
/// `purchase.refunded` otherwise (a one-time product, or a purchase never heard of). The projection's
/// Play enrichment confirms each against the API as it does a pushed one.
///
/// Checkpoints in `reconcile_checkpoints` (job `google`, scope the package), as the Apple backfill's.
public struct GoogleVoidedPurchasesBackfill: Sendable {
    public static let job = "google"
    static let dayMs: Int64 = 86_400_000
    /// Google keeps voided purchases for 30 days; a start an hour inside that.
    static let horizonMs: Int64 = 30 * dayMs - 3_600_000
    static let overlapMs: Int64 = 10 * 60_000
    /// Play counts quota per minute: a 429 waits that long.
    static let rateLimitWait = Duration.seconds(60)
    static let maxRateLimitWaits = 10

    public struct Options: Sendable {
        public var packages: [String]?
        /// An explicit start: read from it, leave the checkpoint alone.
        public var sinceMs: Int64?
        public var dryRun = false

        public init(packages: [String]? = nil, sinceMs: Int64? = nil, dryRun: Bool = false) {
            self.packages = packages
            self.sinceMs = sinceMs
            self.dryRun = dryRun
        }
    }

    let client: PlayAPIClient
    let packages: [String]
    let store: EntitlementStore
    let publisher: (any EventPublisher)?
    let metrics: MerchantMetrics
    private var reconcilePublisher: ReconcilePublisher {
        ReconcilePublisher(job: Self.job, store: store, publisher: publisher, metrics: metrics)
    }
    let logger: Logger
    let now: @Sendable () -> Int64
    let sleep: @Sendable (Duration) async throws -> Void
    /// The share of Play's quota it spends with the at-risk refresh (nil: its own pace only, as `tollgate reconcile` runs it).
    var quota: StoreQuota?

    public init(client: PlayAPIClient, packages: [String], store: EntitlementStore, publisher: (any EventPublisher)?,
                metrics: MerchantMetrics, logger: Logger, quota: StoreQuota? = nil, now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) {
        self.client = client
        self.packages = packages
        self.store = store
        self.publisher = publisher
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.sleep = sleep
        self.quota = quota
    }

    public func run(_ options: Options, beforePage: @Sendable () async throws -> Void = {},
                    progress: @Sendable (ReconcileProgress) -> Void = { _ in }) async throws -> [ReconcileProgress] {
        var results: [ReconcileProgress] = []
        for package in packages where options.packages?.contains(package) ?? true {
            try Task.checkCancellation()
            var state = ReconcileProgress(scope: package)
            do {
                try await reconcile(package, options, &state, beforePage: beforePage, progress: progress)
                metrics.reconcileRun(job: Self.job, outcome: "ok")
            } catch let error as ReconcileStopped {
                state.failure = error.message
                metrics.reconcileRun(job: Self.job, outcome: "failed")
                logger.warning("Google voided purchases backfill stopped", metadata: ["package": .string(package), "error": .string(error.message)])
            }
            progress(state)
            results.append(state)
        }
        return results
    }

    private func reconcile(_ package: String, _ options: Options, _ state: inout ReconcileProgress,
                           beforePage: @Sendable () async throws -> Void, progress: @Sendable (ReconcileProgress) -> Void) async throws {
        let nowMs = now()
        let earliest = nowMs - Self.horizonMs
        let keepsCheckpoint = options.sinceMs == nil && !options.dryRun
        let saved = options.sinceMs == nil ? try await store.reconcileCheckpoint(job: Self.job, scope: package) : nil
        var window: ReconcileCheckpoint.Window
        if let since = options.sinceMs {
            window = .init(startMs: since, endMs: nowMs, pageToken: nil)
        } else if let inProgress = saved?.window {
            window = inProgress
        } else {
            window = .init(startMs: saved?.doneThroughMs.map { $0 - Self.overlapMs } ?? earliest, endMs: nowMs, pageToken: nil)
        }
        if window.startMs < earliest { window = .init(startMs: earliest, endMs: window.endMs, pageToken: nil) }

        while true {
            try await beforePage()
            while let quota, !quota.take(store: "google", app: package) { try await sleep(.seconds(1)) }
            let page = try await fetch(package, startMs: window.startMs, token: window.pageToken, state: &state)
            state.pages += 1
            metrics.reconcilePage(job: Self.job)
            let voided = page.voidedPurchases ?? []
            state.items += voided.count
            var events: [NormalizedEvent] = []
            for purchase in voided {
                if let event = try await event(for: purchase, package: package) { events.append(event) }
            }
            try await reconcilePublisher.publishNew(events, rejected: voided.count - events.count, dryRun: options.dryRun, into: &state)
            progress(state)
            if let next = page.tokenPagination?.nextPageToken, !next.isEmpty {
                window.pageToken = next
                if keepsCheckpoint {
                    try await store.saveReconcileCheckpoint(.init(doneThroughMs: saved?.doneThroughMs, window: window),
                                                            job: Self.job, scope: package, nowMs: now())
                }
            } else {
                if keepsCheckpoint {
                    try await store.saveReconcileCheckpoint(.init(doneThroughMs: window.endMs, window: nil), job: Self.job, scope: package,
                                                            nowMs: now())
                }
                return
            }
        }
    }

    private func fetch(_ package: String, startMs: Int64, token: String?, state: inout ReconcileProgress) async throws -> VoidedPurchasesPage {
        var waits = 0
        while true {
            do {
                return try await client.voidedPurchases(packageName: package, startTimeMillis: startMs, pageToken: token)
            } catch {
                if case .http(429) = error.kind, waits < Self.maxRateLimitWaits {
                    waits += 1
                    state.rateLimitWaits += 1
                    metrics.reconcileRateLimited(job: Self.job)
                    try await sleep(Self.rateLimitWait)
                    continue
                }
                var hint = ""
                if case .http(let status) = error.kind, status == 401 || status == 403 {
                    hint = "; Google refused the service account: check sources.google.playApi.credentialsFile and its access in the Play Console"
                }
                throw ReconcileStopped(message: error.description + hint)
            }
        }
    }

    /// The event of one voided purchase; nil when Google's item lacks its token or time.
    private func event(for purchase: VoidedPurchase, package: String) async throws -> NormalizedEvent? {
        guard let token = purchase.purchaseToken, !token.isEmpty, !token.contains(":"), let voidedMs = purchase.voidedTimeMillis,
              let voidedAt = Timestamp(representableMillisecondsSince1970: voidedMs) else {
            logger.warning("a voided purchase without a usable purchaseToken or voidedTimeMillis; not published", metadata: ["package": .string(package)])
            return nil
        }
        // A license tester's purchase is a sandbox one; Google's void says no environment.
        var known: Purchase?
        for environment in ["production", "sandbox"] where known == nil {
            known = try await store.purchase(PurchaseKey(source: GoogleSender.name.rawValue, app: package, environment: environment, subject: token))
        }
        let type: EventType = known?.kind == .subscription ? .subscriptionRevoked : .purchaseRefunded
        return NormalizedEvent(
            id: "google:voidedpurchases:\(package):\(token):\(voidedMs)", type: type, source: "/google/\(package)", environment: .production,
            app: package, subject: token, occurredAt: voidedAt.rfc3339, receivedAt: Timestamp(millisecondsSince1970: now()).rfc3339,
            product: known?.product, transaction: purchase.orderId.map { NormalizedEvent.Transaction(id: $0) },
            reason: GoogleEventType.refundReason(purchase.refundType.map(Int64.init)), sourceType: "VOIDED_PURCHASE")
    }
}
