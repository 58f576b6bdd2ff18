import Entitlements
import Events
import Foundation
import Logging
import ServiceLifecycle

/// The Apple notification backfill as a periodic job of the workers (`workers.reconcileAppleIntervalSeconds`):
/// one run at start, then one per interval. One replica runs it at a time: the lease `reconcile-apple`
/// in the store, renewed before every page, so a run that outlives its holder is taken over from the
/// checkpoint and never run twice at once.
struct AppleBackfillJob: Service {
    static let leaseName = "reconcile-apple"
    /// Renewed before each page; a page and its 429 waits take far less.
    static let leaseTTLMs: Int64 = 10 * 60_000

    let backfill: AppleNotificationBackfill
    let interval: Duration
    let logger: Logger
    let holder = UUID().uuidString

    struct LeaseLost: Error {}

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await runOnce()
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
    }

    /// One run when this replica holds the lease; false when another does.
    @discardableResult
    func runOnce() async -> Bool {
        let store = backfill.store
        let holder = holder
        do {
            guard try await store.acquireLease(Self.leaseName, holder: holder, ttlMs: Self.leaseTTLMs,
                                               nowMs: Timestamp.now.millisecondsSince1970) else { return false }
            let results = try await backfill.run(AppleNotificationBackfill.Options(), beforePage: {
                guard try await store.acquireLease(Self.leaseName, holder: holder, ttlMs: Self.leaseTTLMs,
                                                   nowMs: Timestamp.now.millisecondsSince1970) else { throw LeaseLost() }
            })
            for result in results {
                logger.info("Apple notification backfill", metadata: [
                    "scope": .string(result.scope), "pages": .stringConvertible(result.pages),
                    "notifications": .stringConvertible(result.notifications), "new": .stringConvertible(result.new),
                    "rejected": .stringConvertible(result.rejected), "failure": .string(result.failure ?? "none")])
            }
            return true
        } catch is CancellationError {
            return true
        } catch is LeaseLost {
            logger.warning("Apple notification backfill: another replica took the lease; it continues from the checkpoint")
            return false
        } catch {
            logger.warning("Apple notification backfill failed; the next run continues from the checkpoint",
                           metadata: ["error": .string("\(error)")])
            return true
        }
    }
}
