import Entitlements
import Logging
import ServiceHost
import ServiceLifecycle

/// Asks Google again for the acknowledgements `PlayAcknowledger` queued, each at its backoff's time,
/// until Google takes it (`retried`), refuses it for good (`failed`) or its three days pass (`expired`,
/// logged at error: Google refunds that purchase). Every replica runs the loop; each due row is claimed
/// in the store before it is tried, so one replica tries it at a time (two would be harmless anyway).
public struct PlayAcknowledgementRetryLoop: Service {
    let acknowledger: PlayAcknowledger
    let pollInterval: Duration
    var batchSize = 100
    /// How long a claimed row is left to the replica that claimed it: far longer than one call.
    static let claimMs: Int64 = 5 * 60_000

    public init(acknowledger: PlayAcknowledger, pollInterval: Duration = .seconds(10)) {
        self.acknowledger = acknowledger
        self.pollInterval = pollInterval
    }

    var store: EntitlementStore { acknowledger.store }
    var metrics: MerchantMetrics { acknowledger.metrics }
    var logger: Logger { acknowledger.logger }

    public func run() async throws {
        let loop = self
        try await PeriodicJob(name: "Play acknowledgement retry pass", interval: pollInterval, logger: logger) {
            let tried = try await loop.retryDue()
            await loop.recordBacklog()
            return tried < loop.batchSize ? .idle : .moreWaiting
        }.run()
    }

    /// One pass over the acknowledgements due now; returns how many it took up.
    func retryDue() async throws -> Int {
        let nowMs = acknowledger.now()
        let due = try await store.claimDuePlayAcknowledgements(nowMs: nowMs, claimUntilMs: nowMs + Self.claimMs, limit: batchSize)
        for pending in due {
            try Task.checkCancellation()
            await retry(pending)
        }
        return due.count
    }

    private func retry(_ pending: PendingPlayAcknowledgement) async {
        guard let kind = PlayAcknowledgement.Kind(rawValue: pending.kind) else {
            metrics.playAcknowledgement(.failed)
            logger.error("queued Play acknowledgement of an unknown kind dropped", metadata: fields(pending, "kind \(pending.kind)"))
            await remove(pending)
            return
        }
        let nowMs = acknowledger.now()
        guard nowMs < pending.deadlineMs else {
            metrics.playAcknowledgement(.expired)
            logger.error("Play acknowledgement not taken by Google within three days of the purchase: Google refunds it",
                         metadata: fields(pending, "attempts \(pending.attempts)"))
            await remove(pending)
            return
        }
        switch await acknowledger.attempt(kind: kind, packageName: pending.packageName, productId: pending.productId,
                                          token: pending.purchaseToken) {
        case .acknowledged:
            await acknowledger.note(pending.packageName, pending.purchaseToken, "acknowledged", "attempt \(pending.attempts + 1)")
            metrics.playAcknowledgement(.retried)
            logger.info("Play acknowledgement taken on a retry", metadata: fields(pending, "attempts \(pending.attempts + 1)"))
            await remove(pending)
        case .refused(let why):
            await acknowledger.note(pending.packageName, pending.purchaseToken, "refused", why)
            metrics.playAcknowledgement(.failed)
            logger.warning("Google refused the Play acknowledgement for good; not retried", metadata: fields(pending, why))
            await remove(pending)
        case .unavailable(let why, let retryAfterSeconds):
            await acknowledger.note(pending.packageName, pending.purchaseToken, "retrying", why)
            let attempts = pending.attempts + 1
            let next = acknowledger.backoff.nextAttemptAtMs(afterAttempts: attempts, nowMs: acknowledger.now(),
                                                            deadlineMs: pending.deadlineMs, retryAfterSeconds: retryAfterSeconds)
            do {
                try await store.reschedulePlayAcknowledgement(pending, attempts: attempts, nextAttemptAtMs: next, lastError: why)
            } catch {
                // The claim runs out and the row is due again: nothing is lost.
                logger.warning("Play acknowledgement retry could not be rescheduled", metadata: fields(pending, "\(error)"))
            }
        }
    }

    private func remove(_ pending: PendingPlayAcknowledgement) async {
        do {
            try await store.removePlayAcknowledgement(pending)
        } catch {
            // Due again once its claim runs out: acknowledged twice, which Google takes.
            logger.warning("Play acknowledgement could not be removed from the queue", metadata: fields(pending, "\(error)"))
        }
    }

    private func recordBacklog() async {
        guard let backlog = try? await store.playAcknowledgementBacklog() else { return }
        let ageMs = backlog.oldestQueuedAtMs.map { max(acknowledger.now() - $0, 0) } ?? 0
        metrics.playAcknowledgementsPending(backlog.count, oldestAgeSeconds: Double(ageMs) / 1_000)
    }

    /// Never the token.
    private func fields(_ p: PendingPlayAcknowledgement, _ detail: String) -> Logger.Metadata {
        ["package": .string(p.packageName), "product": .string(p.productId), "kind": .string(p.kind), "detail": .string(detail)]
    }
}
