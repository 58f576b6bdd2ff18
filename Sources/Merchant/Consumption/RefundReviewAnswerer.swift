import Entitlements
import Events
import Logging
import ProviderAPIs
import ServiceHost
import Store
import Verifiers

/// Answers Google's chargeback reviews (`purchase.refund_review_requested`, a `pendingRefundReviewNotification`)
/// with `orders.reviewrefund` within Google's 24 hours, from the package's policy
/// (`sources.google.refundReviews`) and what the stores know of the purchase (docs/workers.md, "Refund
/// reviews"): the order (`orders.get`) names the purchase and, for a subscription, the service period
/// it paid; the store here says whether the purchase was ever granted.
///
/// As Apple's consumption answers: the projection only queues a review (a `refund_reviews` row, in the
/// event's transaction); `answerDue`, run by the workers' job, answers. A failure that may pass is tried
/// again on the retry tiers' delays (`kafka.retryDelaysMs`: 5 s, a minute, ten minutes, then every ten
/// minutes), a last time a minute before the deadline; one Google refuses for good is counted `failed`.
/// Google records the first answer and takes later ones with 200, so an answer sent twice is harmless.
public struct RefundReviewAnswerer: Sendable {
    /// Google takes an answer for 24 hours after the notification.
    static let windowMs: Int64 = 86_400_000
    static let batch = 20

    /// The `outcome` of `tollgate_refund_reviews_total`.
    enum Outcome: String, Sendable, CaseIterable {
        /// Google took the answer.
        case answered
        /// The package has no policy: nothing is sent (Google decides without the merchant's view).
        case skippedDisabled = "skipped_disabled"
        /// The 24 hours passed before an answer could go.
        case expired
        /// Google refused the answer for good.
        case failed
    }

    let policies: [String: GoogleSettings.RefundReviewPolicy]
    let client: PlayAPIClient
    let store: EntitlementStore
    /// The retry tiers' delays, in order; the last repeats until the deadline.
    let retryDelaysMs: [Int]
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64

    public init(policies: [GoogleSettings.RefundReviewPolicy], client: PlayAPIClient, store: EntitlementStore, retryDelaysMs: [Int],
                metrics: MerchantMetrics, logger: Logger, now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.policies = Dictionary(policies.map { ($0.package, $0) }, uniquingKeysWith: { first, _ in first })
        self.client = client
        self.store = store
        self.retryDelaysMs = retryDelaysMs.isEmpty ? [5_000] : retryDelaysMs
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// What the projection writes with `event` if it is a Google refund review: the review queued, or its
    /// outcome counted once the event commits (no policy, deadline passed); nil for any other event.
    public func step(for event: NormalizedEvent) -> (any ProjectionStep)? {
        guard event.type == .purchaseRefundReviewRequested, Projector.sourceName(of: event) == SourceName.google.rawValue else { return nil }
        guard policies[event.app] != nil else { return ConsumptionAnswerer.Counted { count(.skippedDisabled, eventId: event.id, app: event.app) } }
        let requestedAtMs = Timestamp(rfc3339: event.receivedAt)?.millisecondsSince1970 ?? now()
        let deadlineMs = requestedAtMs + Self.windowMs
        guard let review = event.refundReview, let orderId = event.transaction?.id, !orderId.isEmpty, now() < deadlineMs else {
            return ConsumptionAnswerer.Counted { count(.expired, eventId: event.id, app: event.app) }
        }
        return Queued(review: QueuedRefundReview(eventId: event.id, app: event.app, environment: event.environment.rawValue, orderId: orderId,
                                                 pendingRefundToken: review.pendingRefundToken, requestedAtMs: requestedAtMs, deadlineMs: deadlineMs))
    }

    struct Queued: ProjectionStep {
        let review: QueuedRefundReview
        func apply(eventId: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> ProjectionStepResult {
            try RefundReviewRows.queue(review, nowMs: nowMs, on: connection)
            return ProjectionStepResult(proceeds: true)
        }
    }

    /// Answers the reviews due now (the workers' `refund reviews` job).
    public func answerDue() async throws(StoreError) -> PeriodicJob.Pass {
        let nowMs = now()
        let due = try await RefundReviewRows.claimDue(store, nowMs: nowMs, claimUntilMs: nowMs + 60_000, limit: Self.batch)
        for review in due { try await answer(review) }
        let backlog = try await RefundReviewRows.backlog(store)
        metrics.refundReviewsWaiting(backlog.count, oldestAgeSeconds: backlog.oldestRequestedAtMs.map { Double(max(now() - $0, 0)) / 1_000 } ?? 0)
        return due.count == Self.batch ? .moreWaiting : .idle
    }

    private func answer(_ review: QueuedRefundReview) async throws(StoreError) {
        guard let policy = policies[review.app], now() < review.deadlineMs else {
            try await RefundReviewRows.remove(store, eventId: review.eventId)
            return count(policies[review.app] == nil ? .skippedDisabled : .expired, eventId: review.eventId, app: review.app)
        }
        do {
            let answer = try await compose(review, policy: policy)
            try await client.reviewRefund(packageName: review.app, orderId: review.orderId, answer)
        } catch where error.isTransient {
            let attempts = review.attempts + 1
            let delay = Int64(retryDelaysMs[min(attempts - 1, retryDelaysMs.count - 1)])
            let lastChance = review.deadlineMs - 60_000
            let nowMs = now()
            let next = nowMs < lastChance ? min(nowMs + max(delay, Int64(error.retryAfterSeconds ?? 0) * 1_000), lastChance) : review.deadlineMs
            logger.warning("a refund review's answer failed; trying again", metadata: [
                "event_id": .string(review.eventId), "app": .string(review.app), "attempts": "\(attempts)", "error": .string(error.description)])
            return try await RefundReviewRows.reschedule(store, eventId: review.eventId, attempts: attempts, nextAttemptAtMs: next,
                                                         lastError: error.description)
        } catch {
            try await RefundReviewRows.remove(store, eventId: review.eventId)
            logger.error("Google refused a refund review's answer for good", metadata: [
                "event_id": .string(review.eventId), "app": .string(review.app), "error": .string(error.description)])
            return count(.failed, eventId: review.eventId, app: review.app)
        }
        try await RefundReviewRows.remove(store, eventId: review.eventId)
        count(.answered, eventId: review.eventId, app: review.app)
    }

    /// The answer: the policy's preference and sample; a purchase the store here never granted is approved
    /// (the customer did not get what they paid for); a subscription's share of its paid period used when
    /// the customer disputed it.
    func compose(_ review: QueuedRefundReview, policy: GoogleSettings.RefundReviewPolicy) async throws(PlayAPIError) -> RefundReviewAnswer {
        var preference = policy.refundPreference
        var share: Int?
        // An order Google does not know is no review of its own (a forged notification): nothing is sent for it.
        let order: Order?
        do { order = try await client.order(packageName: review.app, orderId: review.orderId) } catch {
            guard case .http(404) = error.kind else { throw error }
            throw PlayAPIError(call: .order, kind: .http(status: 404), message: "Google knows no order \(review.orderId)")
        }
        if let token = order?.purchaseToken {
            let purchase: Purchase?
            do {
                purchase = try await store.purchase(PurchaseKey(source: SourceName.google.rawValue, app: review.app,
                                                                environment: review.environment, subject: token))
            } catch {
                throw PlayAPIError(call: .order, kind: .network, message: "the entitlement store cannot answer: \(error)")
            }
            if let purchase, !ConsumptionAnswerer.delivered(purchase) { preference = .approve }
            if let period = order?.lineItems?.compactMap(\.subscriptionDetails).first,
               let start = period.servicePeriodStartTime?.millisecondsSince1970, let end = period.servicePeriodEndTime?.millisecondsSince1970,
               end > start {
                let elapsed = min(max(review.requestedAtMs - start, 0), end - start)
                let (scaled, overflow) = elapsed.multipliedReportingOverflow(by: 100_000)
                share = overflow ? nil : Int(scaled / (end - start))
            }
        }
        return RefundReviewAnswer(pendingRefundToken: review.pendingRefundToken, refundPreference: preference,
                                  sampleContentProvided: policy.sampleContentProvided, consumptionPercentageMilliunits: share)
    }

    private func count(_ outcome: Outcome, eventId: String, app: String) {
        metrics.refundReview(outcome: outcome.rawValue)
        logger.log(level: outcome == .answered || outcome == .skippedDisabled ? .info : .warning, "refund review handled",
                   metadata: ["event_id": .string(eventId), "app": .string(app), "outcome": .string(outcome.rawValue)])
    }
}
