import Entitlements
import Events
import Logging
import ProviderAPIs
import Verifiers

/// Answers Apple's consumption requests (`purchase.consumption_requested`, a customer asking Apple for
/// a refund) with Send Consumption Information, from the app's policy
/// (`sources.apple.apps[].consumption`) and what the store knows of the purchase
/// (docs/workers.md, "Consumption requests").
///
/// Runs in the projection before the event is applied: a transient failure sends the whole event to
/// the retry tiers, where it is answered (and applied) again; a permanent one to the DLT. An answer
/// sent twice (a crash between the answer and the commit) is harmless: Apple keeps the latest.
public struct ConsumptionAnswerer: Sendable {
    /// Apple takes answers for 12 hours after it sent the request.
    static let windowMs: Int64 = 12 * 60 * 60 * 1_000

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
        /// Apple refused the answer for good, or the request names no transaction: dead-lettered.
        case failed
    }

    let apps: [String: App]
    let store: EntitlementStore
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64

    /// One app's client and policy; apps whose policy is off have none.
    struct App: Sendable {
        let client: AppStoreAPIClient
        let policy: AppleSettings.App.ConsumptionPolicy
    }

    /// Answers `event` if it is an Apple consumption request; any other event passes untouched.
    public func answer(_ event: NormalizedEvent) async throws(WorkerFailure) {
        guard event.type == .purchaseConsumptionRequested, Projector.sourceName(of: event) == SourceName.apple.rawValue else { return }
        guard let app = apps[event.app], app.policy.enabled else {
            return count(.skippedDisabled, event)
        }
        let requestedAtMs = Self.requestedAtMs(event)
        guard now() <= requestedAtMs + Self.windowMs else {
            return count(.expired, event)
        }
        do {
            // A redelivered request already answered and applied: Apple has the answer.
            if try await store.hasProcessed(eventId: event.id) { return }
        } catch {
            throw WorkerFailure.store(error)
        }
        guard let transactionId = event.transaction?.id, !transactionId.isEmpty else {
            count(.failed, event)
            throw WorkerFailure(.consumptionAnswerFailed, message: "the consumption request \(event.id) names no transaction", isTransient: false)
        }
        let purchase: Purchase?
        do {
            purchase = try await store.purchase(PurchaseKey(source: SourceName.apple.rawValue, app: event.app,
                                                            environment: event.environment.rawValue, subject: event.subject))
        } catch {
            throw WorkerFailure.store(error)
        }
        guard let purchase else {
            return count(.skippedUnknownPurchase, event)
        }
        let request = Self.request(policy: app.policy, purchase: purchase, event: event, requestedAtMs: requestedAtMs)
        do {
            try await app.client.sendConsumptionInformation(transactionId, request, in: event.environment == .sandbox ? .sandbox : .production)
        } catch {
            if !error.isTransient { count(.failed, event) }
            throw WorkerFailure(.consumptionAnswerFailed, message: error.description, isTransient: error.isTransient)
        }
        count(.sent, event)
    }

    /// Apple's request time: the notification's `signedDate` (signed by Apple), else its arrival.
    static func requestedAtMs(_ event: NormalizedEvent) -> Int64 {
        let occurred = Timestamp(rfc3339: event.occurredAt)?.millisecondsSince1970
        let received = Timestamp(rfc3339: event.receivedAt)?.millisecondsSince1970
        return occurred ?? received ?? 0
    }

    /// The answer: consent, sample and preference from the policy; delivery and consumption from the store
    /// and the request's transaction.
    static func request(policy: AppleSettings.App.ConsumptionPolicy, purchase: Purchase, event: NormalizedEvent,
                        requestedAtMs: Int64) -> ConsumptionRequest {
        let delivered = delivered(purchase)
        return ConsumptionRequest(
            customerConsented: policy.customerConsented,
            deliveryStatus: delivered ? .delivered : .undeliveredOther,
            sampleContentProvided: policy.sampleContentProvided,
            // Apple refuses a percentage other than 0 for a purchase not delivered.
            consumptionPercentage: delivered ? consumedMilliPercent(purchase, event, atMs: requestedAtMs) : 0,
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
    static func consumedMilliPercent(_ purchase: Purchase, _ event: NormalizedEvent, atMs requestedAtMs: Int64) -> Int? {
        guard purchase.kind == .subscription,
              let start = event.transaction?.purchasedAt.flatMap(Timestamp.init(rfc3339:))?.millisecondsSince1970,
              let end = (event.transaction?.expiresAt.flatMap(Timestamp.init(rfc3339:))?.millisecondsSince1970 ?? purchase.expiresAtMs),
              end > start else { return nil }
        let elapsed = min(max(requestedAtMs - start, 0), end - start)
        // Dates from a signed transaction, but not trusted to be sane: an overflow gives no percentage.
        let (scaled, overflow) = elapsed.multipliedReportingOverflow(by: 100_000)
        return overflow ? nil : Int(scaled / (end - start))
    }

    private func count(_ outcome: Outcome, _ event: NormalizedEvent) {
        metrics.consumptionAnswer(outcome: outcome.rawValue)
        logger.log(level: outcome == .sent || outcome == .skippedDisabled ? .info : .warning, "consumption request handled",
                   metadata: ["event_id": .string(event.id), "app": .string(event.app), "outcome": .string(outcome.rawValue)])
    }
}

/// The apps whose consumption requests the workers answer: those whose policy is on, each with its App
/// Store Server API client (the config refuses an enabled policy without a `serverApi` key).
public struct ConsumptionAnswering: Sendable {
    let apps: [String: ConsumptionAnswerer.App]

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
