import Config
import Entitlements
import Logging
import ServiceHost
import ServiceLifecycle

/// Marks checkouts still pending after `checkouts.expirySeconds` `expired`, and deletes those expired
/// for `checkouts.retentionDays`, every 15 seconds. Every replica sweeps; the update only touches
/// pending rows and the delete only expired ones, so two sweeps never count one twice.
public struct CheckoutExpirySweeper: Service {
    let records: CheckoutRecords
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64
    /// `checkouts.retentionDays`: how long an expired checkout is kept after its expiry.
    var retentionDays = CheckoutSettings().retentionDays
    var interval: Duration = .seconds(15)

    public func run() async throws {
        let sweeper = self
        try await PeriodicJob(name: "checkout expiry sweep", interval: interval, logger: logger) {
            _ = try await sweeper.sweepOnce()
            return .idle
        }.run()
    }

    /// Expires what is due now, then prunes what expired more than `retentionDays` ago; returns how many expired.
    func sweepOnce() async throws -> Int {
        let nowMs = now()
        let expired = try await records.expire(nowMs: nowMs)
        if expired > 0 {
            metrics.checkoutsExpired(expired)
            logger.info("checkouts expired unpaid", metadata: ["count": "\(expired)"])
        }
        // A batch per pass keeps each transaction short; a backlog drains over the next passes.
        let pruned = try await records.prune(expiredBeforeMs: nowMs - Int64(retentionDays) * 86_400_000)
        if pruned > 0 {
            metrics.checkoutsPruned(pruned)
            logger.info("expired checkouts deleted after checkouts.retentionDays", metadata: ["count": "\(pruned)"])
        }
        return expired
    }
}
