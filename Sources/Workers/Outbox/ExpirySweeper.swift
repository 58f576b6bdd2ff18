import Entitlements
import Events
import Logging
import ServiceHost
import ServiceLifecycle

/// Publishes what time alone changes: an entitlement whose expiry or grace period ends with no
/// notification stops entitling in the API at that moment, and this queues its `active: false` change
/// in the outbox, so the relay publishes it on `tollgate.entitlements` in order with the projection's
/// changes. It looks every half `workers.expiryPublishDelayMs`, so each end is queued within half the
/// delay and published well within it. Every replica sweeps; the store queues each end once
/// (`EntitlementStore.queueExpiries` reads each entitlement again under its lock).
public struct ExpirySweeper: Service {
    let store: EntitlementStore
    let delayMs: Int
    let metrics: WorkerMetrics
    let logger: Logger
    /// The time the ends are compared with (tests move it by hand).
    let now: @Sendable () -> Int64
    var batchSize = 500

    init(store: EntitlementStore, delayMs: Int, metrics: WorkerMetrics, logger: Logger, now: @escaping @Sendable () -> Int64) {
        self.store = store
        self.delayMs = delayMs
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// Half the delay: the other half is left for the relay, which polls every 200 ms.
    var interval: Duration { .milliseconds(max(delayMs / 2, 50)) }

    public func run() async throws {
        let sweeper = self
        try await PeriodicJob(name: "expiry sweep", interval: interval, logger: logger) {
            try await sweeper.sweepOnce() < sweeper.batchSize ? .idle : .moreWaiting
        }.run()
    }

    /// Queues the ends due now; returns how many it queued.
    func sweepOnce() async throws -> Int {
        let queued = try await store.queueExpiries(nowMs: now(), limit: batchSize)
        if queued > 0 { metrics.expiriesQueued(queued) }
        return queued
    }
}
