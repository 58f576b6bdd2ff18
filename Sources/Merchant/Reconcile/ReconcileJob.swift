import Entitlements
import Events
import Foundation
import Logging
import ProviderAPIs
import ServiceHost
import ServiceLifecycle

/// A reconciliation as a periodic job of the workers: one run per interval (`workers.reconcileAppleIntervalSeconds`,
/// `workers.reconcileGoogleIntervalSeconds`). The first after start waits until an interval after the job
/// last moved a checkpoint (at once when that is past: the workers were down longer; a whole interval
/// when there is none yet), or runs at once with `startsNow` (`--reconcile-now`). One replica runs
/// it at a time: its own lease in the store (`reconcile-apple`, `reconcile-google`), renewed before
/// every page, so a run that outlives its holder is taken over from the checkpoint, never run twice at once.
public struct ReconcileJob: Service {
    typealias Run = @Sendable (_ beforePage: @escaping @Sendable () async throws -> Void) async throws -> [ReconcileProgress]

    /// Renewed before each page; a page and its 429 waits take far less.
    static let leaseTTLMs: Int64 = 15 * 60_000

    let job: String
    let store: EntitlementStore
    let interval: Duration
    let logger: Logger
    let reconcile: Run
    /// Run at once at start, whatever the checkpoints say.
    var startsNow = false
    /// Milliseconds since 1970 (tests move it).
    var now: @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }
    let holder = UUID().uuidString

    var leaseName: String { Self.leaseName(job) }
    static func leaseName(_ job: String) -> String { "reconcile-\(job)" }

    public static func apple(_ backfill: AppleNotificationBackfill, interval: Duration, startsNow: Bool = false, logger: Logger) -> ReconcileJob {
        ReconcileJob(job: AppleNotificationBackfill.job, store: backfill.store, interval: interval, logger: logger, reconcile: { beforePage in
            try await backfill.run(.init(), beforePage: beforePage)
        }, startsNow: startsNow)
    }

    public static func google(_ backfill: GoogleVoidedPurchasesBackfill, interval: Duration, startsNow: Bool = false, logger: Logger) -> ReconcileJob {
        ReconcileJob(job: GoogleVoidedPurchasesBackfill.job, store: backfill.store, interval: interval, logger: logger, reconcile: { beforePage in
            try await backfill.run(.init(), beforePage: beforePage)
        }, startsNow: startsNow)
    }

    /// How long the first run after start waits: none with `startsNow`; else until an interval after the
    /// job last moved a checkpoint (a scope no longer configured keeps an old one: the latest counts); the
    /// whole interval without a checkpoint (or when the store cannot say).
    func firstRunDelay() async -> Duration {
        if startsNow { return .zero }
        guard let latest = try? await store.latestReconcileCheckpointUpdateMs(job: job) else { return interval }
        let intervalMs = interval.components.seconds * 1_000 + interval.components.attoseconds / 1_000_000_000_000_000
        return .milliseconds(max(0, min(intervalMs, latest + intervalMs - now())))
    }

    struct LeaseLost: Error {}

    public func run() async throws {
        let job = self
        // A failed run is logged by `runOnce` and continues from its checkpoint at the next interval.
        try await PeriodicJob(name: "reconciliation", interval: interval, logger: logger, firstPassAfter: { await job.firstRunDelay() }) {
            await job.runOnce()
            return .idle
        }.run()
    }

    /// One run when this replica holds the lease; false when another does.
    @discardableResult
    func runOnce() async -> Bool {
        let store = store, holder = holder, leaseName = leaseName
        do {
            guard try await store.acquireLease(leaseName, holder: holder, ttlMs: Self.leaseTTLMs,
                                               nowMs: Timestamp.now.millisecondsSince1970) else { return false }
            let results = try await reconcile {
                guard try await store.acquireLease(leaseName, holder: holder, ttlMs: Self.leaseTTLMs,
                                                   nowMs: Timestamp.now.millisecondsSince1970) else { throw LeaseLost() }
            }
            for result in results {
                logger.info("reconciliation", metadata: [
                    "job": .string(job), "scope": .string(result.scope), "pages": .stringConvertible(result.pages),
                    "items": .stringConvertible(result.items), "new": .stringConvertible(result.new),
                    "rejected": .stringConvertible(result.rejected), "failure": .string(result.failure ?? "none")])
            }
            return true
        } catch is CancellationError {
            return true
        } catch is LeaseLost {
            logger.warning("reconciliation: another replica took the lease; it continues from the checkpoint", metadata: ["job": .string(job)])
            return false
        } catch {
            logger.warning("reconciliation failed; the next run continues from the checkpoint",
                           metadata: ["job": .string(job), "error": .string("\(error)")])
            return true
        }
    }
}
