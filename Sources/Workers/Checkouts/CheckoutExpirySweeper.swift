import Entitlements
import Logging
import ServiceLifecycle

/// Marks checkouts still pending after `checkouts.expirySeconds` `expired`, every 15 seconds. Every
/// replica sweeps; the update only touches pending rows, so two sweeps never count one twice.
struct CheckoutExpirySweeper: Service {
    let records: CheckoutRecords
    let metrics: WorkerMetrics
    let logger: Logger
    let now: @Sendable () -> Int64
    var interval: Duration = .seconds(15)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    _ = try await sweepOnce()
                } catch {
                    logger.warning("checkout expiry sweep failed; trying again", metadata: ["error": .string("\(error)")])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// Expires what is due now; returns how many.
    func sweepOnce() async throws -> Int {
        let expired = try await records.expire(nowMs: now())
        if expired > 0 {
            metrics.checkoutsExpired(expired)
            logger.info("checkouts expired unpaid", metadata: ["count": "\(expired)"])
        }
        return expired
    }
}
