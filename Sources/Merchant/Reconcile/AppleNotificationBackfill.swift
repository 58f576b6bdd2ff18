import Config
import Entitlements
import Events
import Kafka
import Logging
import ProviderAPIs
import Toolkit
import Verifiers

/// Reads Apple's Get Notification History back, per app with a `serverApi` key and per environment the
/// app enables, and publishes to `tollgate.events` what the gateway would have published had it
/// received each notification: each `signedPayload` goes through the Apple sender's own verification and
/// normalization (`source`), so its event keeps the id it would have had and a notification the
/// gateway did receive is a duplicate the projection skips. Events already in `processed_events` are
/// counted as known and not published again.
///
/// Where each app and environment stands is kept in `reconcile_checkpoints` (job `apple`): a run
/// continues the window in progress from its pagination token, else reads from where the last one
/// ended (less `overlapMs`, for notifications Apple records late) to now.
public struct AppleNotificationBackfill: Sendable {
    public static let job = "apple"

    /// Apple answers Get Notification History for the last 180 days in production, 30 in sandbox;
    /// a start an hour inside that keeps clocks that differ a little from Apple's within it.
    static let dayMs: Int64 = 86_400_000
    static func earliestStartMs(_ environment: AppStoreEnvironment, nowMs: Int64) -> Int64 {
        nowMs - (environment == .production ? 180 : 30) * dayMs + 3_600_000
    }

    /// Re-read before the last checkpoint: Apple may record a notification a little after its time.
    static let overlapMs: Int64 = 10 * 60_000
    /// 429s waited out for one page before the run gives up on the scope.
    static let maxRateLimitWaits = 10

    public struct Options: Sendable {
        /// Only these bundle ids (nil: every app with a key).
        public var apps: [String]?
        /// An explicit window: read it whatever the checkpoint says, and leave the checkpoint alone.
        public var sinceMs: Int64?
        public var untilMs: Int64?
        /// Only notifications Apple failed to deliver (`onlyFailures`).
        public var onlyFailures = false
        /// Read and verify, publish nothing, move no checkpoint.
        public var dryRun = false

        public init(apps: [String]? = nil, sinceMs: Int64? = nil, untilMs: Int64? = nil, onlyFailures: Bool = false, dryRun: Bool = false) {
            self.apps = apps
            self.sinceMs = sinceMs
            self.untilMs = untilMs
            self.onlyFailures = onlyFailures
            self.dryRun = dryRun
        }
    }

    public typealias Progress = ReconcileProgress

    public struct Scope: Sendable {
        public let bundleId: String
        public let environment: AppStoreEnvironment
        public var name: String { "\(bundleId)/\(environment.rawValue)" }
    }

    let clients: [String: AppStoreAPIClient]
    let apps: [AppleSettings.App]
    let source: any WebhookSource
    let store: EntitlementStore
    let publisher: (any EventPublisher)?
    let firstRunDays: Int
    let metrics: MerchantMetrics
    private var reconcilePublisher: ReconcilePublisher {
        ReconcilePublisher(job: Self.job, store: store, publisher: publisher, metrics: metrics)
    }
    let logger: Logger
    let now: @Sendable () -> Int64
    let sleep: @Sendable (Duration) async throws -> Void

    /// `publisher` may be nil only for dry runs. `firstRunDays`: how far back a scope without a checkpoint starts.
    public init(clients: [String: AppStoreAPIClient], apps: [AppleSettings.App], source: any WebhookSource, store: EntitlementStore,
                publisher: (any EventPublisher)?, firstRunDays: Int, metrics: MerchantMetrics, logger: Logger,
                now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
                sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }) {
        self.clients = clients
        self.apps = apps
        self.source = source
        self.store = store
        self.publisher = publisher
        self.firstRunDays = firstRunDays
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.sleep = sleep
    }

    /// The apps and environments a run covers: apps with a key, each environment among Production and
    /// Sandbox that the app enables.
    public func scopes(_ options: Options) -> [Scope] {
        apps.filter { clients[$0.bundleId] != nil && (options.apps?.contains($0.bundleId) ?? true) }.flatMap { app in
            AppStoreEnvironment.allCases.filter { app.environments.contains($0.rawValue) }
                .map { Scope(bundleId: app.bundleId, environment: $0) }
        }
    }

    /// One run over every scope; a scope that fails does not stop the others. `beforePage` runs before
    /// each page is asked for (the job renews its lease there; throwing stops the run).
    public func run(_ options: Options, beforePage: @Sendable () async throws -> Void = {},
                    progress: @Sendable (Progress) -> Void = { _ in }) async throws -> [Progress] {
        var results: [Progress] = []
        for scope in scopes(options) {
            try Task.checkCancellation()
            var state = Progress(scope: scope.name)
            do {
                try await reconcile(scope, options, &state, beforePage: beforePage, progress: progress)
                metrics.reconcileRun(job: Self.job, outcome: "ok")
            } catch let error as ReconcileStopped {
                state.failure = error.message
                metrics.reconcileRun(job: Self.job, outcome: error.outcome)
                logger.warning("Apple notification backfill stopped", metadata: ["scope": .string(scope.name), "error": .string(error.message)])
            }
            progress(state)
            results.append(state)
        }
        return results
    }

    private func reconcile(_ scope: Scope, _ options: Options, _ state: inout Progress,
                           beforePage: @Sendable () async throws -> Void, progress: @Sendable (Progress) -> Void) async throws {
        guard let client = clients[scope.bundleId] else { return }
        let nowMs = now()
        let earliest = Self.earliestStartMs(scope.environment, nowMs: nowMs)
        let explicit = options.sinceMs != nil || options.untilMs != nil
        let keepsCheckpoint = !explicit && !options.dryRun
        var window: ReconcileCheckpoint.Window
        let saved = explicit ? nil : try await store.reconcileCheckpoint(job: Self.job, scope: scope.name)
        if explicit {
            window = .init(startMs: options.sinceMs ?? nowMs - Int64(firstRunDays) * Self.dayMs, endMs: min(options.untilMs ?? nowMs, nowMs),
                           pageToken: nil)
        } else if let inProgress = saved?.window {
            window = inProgress
        } else {
            let start = saved?.doneThroughMs.map { $0 - Self.overlapMs } ?? nowMs - Int64(firstRunDays) * Self.dayMs
            window = .init(startMs: start, endMs: nowMs, pageToken: nil)
        }
        if window.startMs < earliest {
            // Apple refuses older starts; a token from a longer window would not be valid for this one.
            window = .init(startMs: earliest, endMs: window.endMs, pageToken: nil)
        }
        guard window.startMs < window.endMs else { return }
        let request = NotificationHistoryRequest(startDate: window.startMs, endDate: window.endMs, onlyFailures: options.onlyFailures ? true : nil)

        while true {
            try await beforePage()
            let page: NotificationHistoryPage
            do {
                page = try await fetch(client, request, token: window.pageToken, scope: scope, state: &state)
            } catch let stopped as ReconcileStopped where stopped.restartsWindow && keepsCheckpoint {
                try await store.saveReconcileCheckpoint(.init(doneThroughMs: saved?.doneThroughMs,
                                                              window: .init(startMs: window.startMs, endMs: window.endMs, pageToken: nil)),
                                                        job: Self.job, scope: scope.name, nowMs: now())
                throw stopped
            }
            state.pages += 1
            metrics.reconcilePage(job: Self.job)
            let items = page.notificationHistory ?? []
            state.items += items.count
            var events: [NormalizedEvent] = []
            for item in items {
                if let event = try await verified(item, scope: scope) { events.append(event) }
            }
            try await reconcilePublisher.publishNew(events, rejected: items.count - events.count, dryRun: options.dryRun, into: &state)
            progress(state)
            let more = page.hasMore == true
            if more {
                guard let next = page.paginationToken, !next.isEmpty else {
                    throw ReconcileStopped(message: "Apple's page says hasMore but gives no paginationToken")
                }
                window.pageToken = next
                if keepsCheckpoint {
                    try await store.saveReconcileCheckpoint(.init(doneThroughMs: saved?.doneThroughMs, window: window),
                                                            job: Self.job, scope: scope.name, nowMs: now())
                }
            } else {
                if keepsCheckpoint {
                    try await store.saveReconcileCheckpoint(.init(doneThroughMs: window.endMs, window: nil),
                                                            job: Self.job, scope: scope.name, nowMs: now())
                }
                return
            }
        }
    }

    /// One page; a 429 waits `Retry-After` and asks again.
    private func fetch(_ client: AppStoreAPIClient, _ request: NotificationHistoryRequest, token: String?, scope: Scope,
                       state: inout Progress) async throws -> NotificationHistoryPage {
        var waits = 0
        while true {
            do {
                return try await client.notificationHistory(request, paginationToken: token, in: scope.environment)
            } catch {
                if case .rateLimited(let seconds) = error.kind, waits < Self.maxRateLimitWaits {
                    waits += 1
                    state.rateLimitWaits += 1
                    metrics.reconcileRateLimited(job: Self.job)
                    logger.info("Apple rate-limited the notification history; waiting", metadata: [
                        "scope": .string(scope.name), "retry_after_s": .stringConvertible(seconds)])
                    try await sleep(.seconds(seconds))
                    continue
                }
                var restarts = false
                if case .http(400, .paginationTokenExpired?) = error.kind { restarts = true }
                if case .http(400, .invalidPaginationToken?) = error.kind { restarts = true }
                throw ReconcileStopped(message: error.description + Self.hint(error), restartsWindow: restarts,
                                       outcome: error.isKeyRefused ? "key_refused" : "failed")
            }
        }
    }

    private static func hint(_ error: AppStoreAPIError) -> String {
        switch error.kind {
        case .http(401, _): "; Apple refused the key: check its issuer id, key id and .p8 (App Store Connect, Users and Access, Integrations)"
        case .http(400, .paginationTokenExpired?), .http(400, .invalidPaginationToken?):
            "; the window in progress is read again from its start on the next run"
        default: ""
        }
    }

    /// The item's event as the gateway would have published it; nil when the Apple sender refuses it
    /// (logged with its reason, never its payload).
    private func verified(_ item: NotificationHistoryPage.Item, scope: Scope) async throws -> NormalizedEvent? {
        // A compact JWS is base64url and dots: anything else cannot be one, and must not reach the JSON body.
        guard let signed = item.signedPayload, !signed.isEmpty,
              signed.utf8.allSatisfy({ Self.jwsCharacters.contains($0) }) else {
            logger.warning("Apple's notification history holds an item without a usable signedPayload", metadata: ["scope": .string(scope.name)])
            return nil
        }
        let request = WebhookRequest(path: "/webhooks/apple", headers: HeaderFields([("Content-Type", "application/json")]),
                                     body: Array(#"{"signedPayload":"\#(signed)"}"#.utf8), receivedAt: Timestamp(millisecondsSince1970: now()))
        do {
            let delivery = try await source.handle(request)
            guard let event = delivery.events.first else { return nil }
            // Each environment's history holds that environment's notifications; anything else is not Apple's answer.
            guard event.environment.rawValue == scope.environment.rawValue.lowercased() else {
                logger.warning("a notification in Apple's history names another environment; not published", metadata: [
                    "scope": .string(scope.name), "environment": .string(event.environment.rawValue)])
                return nil
            }
            return event
        } catch {
            logger.warning("a notification from Apple's history does not verify; not published", metadata: [
                "scope": .string(scope.name), "reason": .string(error.code), "error": .string(error.message)])
            return nil
        }
    }

    private static let jwsCharacters = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.".utf8))
}
