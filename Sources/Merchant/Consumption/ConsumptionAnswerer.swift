import Entitlements
import Events
import Logging
import ProviderAPIs
import ServiceHost
import Store
import Verifiers

/// Answers Apple's consumption requests (`purchase.consumption_requested`, a customer asking Apple for
/// a refund) with Send Consumption Information, from the app's policy
/// (`sources.apple.apps[].consumption`) and what the store knows of the purchase
/// (docs/workers.md, "Consumption requests").
///
/// The projection only queues a request (`step(for:)`: a row of `consumption_answers`, written in the
/// event's transaction, so it is queued once with the event and never for an event that did not
/// apply); `answerDue`, run by the workers' job, answers what is queued: a failure that may pass is
/// tried again later (5 s, doubling, at most 10 minutes apart, a last time a minute before Apple's 12
/// hours end; the Play acknowledgements' backoff), a permanent
/// one is counted `failed` and logged. An answer sent twice (a crash between the answer and the row's
/// removal) is harmless: Apple keeps the latest.
public struct ConsumptionAnswerer: Sendable {
    /// Apple takes answers for 12 hours after it sent the request.
    static let windowMs: Int64 = 12 * 60 * 60 * 1_000
    /// Requests answered per pass; a fuller queue is drained pass after pass.
    static let batch = 20

    /// What became of one consumption request: the `outcome` of `tollgate_worker_consumption_answers_total`.
    enum Outcome: String, Sendable, CaseIterable {
        /// Apple accepted the answer (202).
        case sent
        /// The app's policy is off (or absent): nothing is sent.
        case skippedDisabled = "skipped_disabled"
        /// The store knows no such purchase: Tollgate cannot say whether it was delivered, so it sends nothing.
        case skippedUnknownPurchase = "skipped_unknown_purchase"
        /// Apple's 12 hours passed before an answer could go: dropped.
        case expired
        /// Apple refused the answer for good: dropped, logged.
        case failed
    }

    let apps: [String: App]
    let store: EntitlementStore
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64
    /// The wait before the first new attempt after a failure that may pass; it doubles, to at most 10 minutes.
    var firstRetryMs: Int64 = 5_000

    /// One app's client and policy; apps whose policy is off have none.
    struct App: Sendable {
        let client: AppStoreAPIClient
        let policy: AppleSettings.App.ConsumptionPolicy
    }

    /// What the projection writes with `event` if it is an Apple consumption request: the request
    /// queued, or its outcome counted once the event commits (policy off, Apple's window over); nil for
    /// any other event. A request that names no transaction cannot be answered: dead-lettered.
    public func step(for event: NormalizedEvent) throws(WorkerFailure) -> (any ProjectionStep)? {
        guard event.type == .purchaseConsumptionRequested, Projector.sourceName(of: event) == SourceName.apple.rawValue else { return nil }
        guard let app = apps[event.app], app.policy.enabled else { return Counted { count(.skippedDisabled, eventId: event.id, app: event.app) } }
        let requestedAtMs = Self.requestedAtMs(event)
        guard now() <= requestedAtMs + Self.windowMs else { return Counted { count(.expired, eventId: event.id, app: event.app) } }
        guard let transactionId = event.transaction?.id, !transactionId.isEmpty else {
            count(.failed, eventId: event.id, app: event.app)
            throw WorkerFailure(.consumptionAnswerFailed, message: "the consumption request \(event.id) names no transaction", isTransient: false)
        }
        let period = event.transaction
        return Queued(request: QueuedConsumptionRequest(
            eventId: event.id, app: event.app, environment: event.environment.rawValue, subject: event.subject, transactionId: transactionId,
            requestedAtMs: requestedAtMs, purchasedAtMs: period?.purchasedAt.flatMap(Timestamp.init(rfc3339:))?.millisecondsSince1970,
            expiresAtMs: period?.expiresAt.flatMap(Timestamp.init(rfc3339:))?.millisecondsSince1970))
    }

    /// Queues the request in the event's transaction.
    struct Queued: ProjectionStep {
        let request: QueuedConsumptionRequest
        func apply(eventId: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> ProjectionStepResult {
            try ConsumptionAnswerRows.queue(request, nowMs: nowMs, on: connection)
            return ProjectionStepResult(proceeds: true)
        }
    }

    /// Counts an outcome decided without the store, once the event commits.
    struct Counted: ProjectionStep {
        let count: @Sendable () -> Void
        func apply(eventId: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> ProjectionStepResult {
            ProjectionStepResult(proceeds: true, afterCommit: count)
        }
    }

    /// Answers the queued requests due now (the workers' `consumption answers` job).
    public func answerDue() async throws(StoreError) -> PeriodicJob.Pass {
        let nowMs = now()
        // Claimed for a minute: another replica's job leaves them alone while this one answers.
        let due = try await ConsumptionAnswerRows.claimDue(store, nowMs: nowMs, claimUntilMs: nowMs + 60_000, limit: Self.batch)
        for request in due { try await answer(request) }
        let backlog = try await ConsumptionAnswerRows.backlog(store)
        metrics.consumptionAnswersWaiting(backlog.count, oldestAgeSeconds: backlog.oldestRequestedAtMs.map { Double(max(now() - $0, 0)) / 1_000 } ?? 0)
        return due.count == Self.batch ? .moreWaiting : .idle
    }

    private func answer(_ queued: QueuedConsumptionRequest) async throws(StoreError) {
        guard let app = apps[queued.app], now() <= queued.requestedAtMs + Self.windowMs else {
            try await ConsumptionAnswerRows.remove(store, eventId: queued.eventId)
            return count(apps[queued.app] == nil ? .skippedDisabled : .expired, eventId: queued.eventId, app: queued.app)
        }
        let purchase = try await store.purchase(PurchaseKey(source: SourceName.apple.rawValue, app: queued.app, environment: queued.environment,
                                                            subject: queued.subject))
        guard let purchase else {
            try await ConsumptionAnswerRows.remove(store, eventId: queued.eventId)
            return count(.skippedUnknownPurchase, eventId: queued.eventId, app: queued.app)
        }
        let request = Self.request(policy: app.policy, purchase: purchase, queued: queued)
        do {
            try await app.client.sendConsumptionInformation(queued.transactionId, request,
                                                            in: queued.environment == NormalizedEvent.Environment.sandbox.rawValue ? .sandbox : .production)
        } catch where error.isTransient || error.isKeyRefused {
            await note(queued, "retrying", error.description)
            // A refused key is permanent until fixed, but Apple takes the answer for 12 hours: a key
            // being rotated, or fixed meanwhile, still gets it there.
            let attempts = queued.attempts + 1
            // A last attempt still fits in Apple's window.
            let nextAttemptAtMs = PlayAcknowledgementBackoff(initialMs: firstRetryMs, maxMs: 600_000, lastAttemptBeforeDeadlineMs: 60_000)
                .nextAttemptAtMs(afterAttempts: attempts, nowMs: now(), deadlineMs: queued.requestedAtMs + Self.windowMs, retryAfterSeconds: nil)
            logger.warning("a consumption answer failed; trying again", metadata: ["event_id": .string(queued.eventId), "app": .string(queued.app),
                                                                                  "attempts": "\(attempts)", "error": .string(error.description)])
            return try await ConsumptionAnswerRows.reschedule(store, eventId: queued.eventId, attempts: attempts, nextAttemptAtMs: nextAttemptAtMs,
                                                              lastError: error.description)
        } catch {
            await note(queued, "refused", error.description)
            try await ConsumptionAnswerRows.remove(store, eventId: queued.eventId)
            logger.error("Apple refused a consumption answer for good", metadata: ["event_id": .string(queued.eventId), "app": .string(queued.app),
                                                                                     "error": .string(error.description)])
            return count(.failed, eventId: queued.eventId, app: queued.app)
        }
        await note(queued, "sent", "")
        try await ConsumptionAnswerRows.remove(store, eventId: queued.eventId)
        count(.sent, eventId: queued.eventId, app: queued.app)
    }

    /// The answer in the purchase's story (the console's).
    private func note(_ queued: QueuedConsumptionRequest, _ outcome: String, _ detail: String) async {
        await store.noteStoreCall("apple.consumption_answer", source: SourceName.apple.rawValue, app: queued.app, subject: queued.subject,
                                  environment: queued.environment, outcome: outcome, detail: detail, nowMs: now())
    }

    /// Apple's request time: the notification's `signedDate` (signed by Apple), else its arrival.
    static func requestedAtMs(_ event: NormalizedEvent) -> Int64 {
        let occurred = Timestamp(rfc3339: event.occurredAt)?.millisecondsSince1970
        let received = Timestamp(rfc3339: event.receivedAt)?.millisecondsSince1970
        return occurred ?? received ?? 0
    }

    /// The answer: consent, sample and preference from the policy; delivery and consumption from the store
    /// and the request's transaction.
    static func request(policy: AppleSettings.App.ConsumptionPolicy, purchase: Purchase, queued: QueuedConsumptionRequest) -> ConsumptionRequest {
        let delivered = delivered(purchase)
        return ConsumptionRequest(
            customerConsented: policy.customerConsented,
            deliveryStatus: delivered ? .delivered : .undeliveredOther,
            sampleContentProvided: policy.sampleContentProvided,
            // Apple refuses a percentage other than 0 for a purchase not delivered.
            consumptionPercentage: delivered ? consumedMilliPercent(purchase, queued) : 0,
            refundPreference: policy.refundPreference.flatMap { ConsumptionRequest.RefundPreference(rawValue: $0.rawValue) })
    }

    /// Whether the purchase was ever granted to its user: a user to entitle, and a state past payment.
    static func delivered(_ purchase: Purchase) -> Bool {
        guard purchase.user != nil else { return false }
        switch purchase.state {
        case .pending, .failed: return false
        default: return true
        }
    }

    /// How much of a subscription period had passed when the customer asked, in milliunits of a percent
    /// (0 to 100000); nil for a one-time purchase or a period the transaction does not give, as
    /// Tollgate cannot know how much of a one-time purchase was used.
    static func consumedMilliPercent(_ purchase: Purchase, _ queued: QueuedConsumptionRequest) -> Int? {
        guard purchase.kind == .subscription, let start = queued.purchasedAtMs, let end = queued.expiresAtMs ?? purchase.expiresAtMs,
              end > start else { return nil }
        let elapsed = min(max(queued.requestedAtMs - start, 0), end - start)
        // Dates from a signed transaction, but not trusted to be sane: an overflow gives no percentage.
        let (scaled, overflow) = elapsed.multipliedReportingOverflow(by: 100_000)
        return overflow ? nil : Int(scaled / (end - start))
    }

    private func count(_ outcome: Outcome, eventId: String, app: String) {
        metrics.consumptionAnswer(outcome: outcome.rawValue)
        logger.log(level: outcome == .sent || outcome == .skippedDisabled ? .info : .warning, "consumption request handled",
                   metadata: ["event_id": .string(eventId), "app": .string(app), "outcome": .string(outcome.rawValue)])
    }
}

/// The apps whose consumption requests the workers answer: those whose policy is on, each with its App
/// Store Server API client (the config refuses an enabled policy without a `serverApi` key).
public struct ConsumptionAnswering: Sendable {
    let apps: [String: ConsumptionAnswerer.App]
    /// How often the job looks for queued requests.
    public var interval: Duration = .seconds(1)
    /// `ConsumptionAnswerer.firstRetryMs`.
    public var firstRetryMs: Int64 = 5_000

    /// `clients` by bundle id, as `AppStoreAPIClients.make` builds them.
    public init(settings: AppleSettings, clients: [String: AppStoreAPIClient]) {
        var apps: [String: ConsumptionAnswerer.App] = [:]
        for app in settings.apps where app.consumption.enabled {
            guard let client = clients[app.bundleId] else { continue }
            apps[app.bundleId] = ConsumptionAnswerer.App(client: client, policy: app.consumption)
        }
        self.apps = apps
    }

    /// Whether any app's policy is on.
    public static func isEnabled(in settings: AppleSettings) -> Bool {
        settings.apps.contains { $0.consumption.enabled }
    }
}
