import Entitlements
import Events
import Foundation
import Logging
import ServiceHost
import ServiceLifecycle

/// Re-reads the purchases at risk from their stores when they fall due, so a lost notification costs
/// minutes, not a day (docs/reconciliation.md): those in grace period, billing retry, on hold or pending,
/// and active subscriptions whose paid period ends within the hour (a renewal would have moved the
/// end) or ended within the last day with no event since. Each is read at most once per
/// `workers.refreshSpacingSeconds`, within each store's quota (`StoreQuota`): what the quota cannot
/// take now waits for the next pass. One replica runs it at a time (the `refresh-at-risk` lease).
public struct AtRiskRefresh: Service {
    static let leaseName = "refresh-at-risk"
    /// Renewed before every read, each of which ends within the store API's timeouts.
    static let leaseTTLMs: Int64 = 5 * 60_000
    static let aheadMs: Int64 = 3_600_000
    static let behindMs: Int64 = 86_400_000
    /// Purchases read per pass at most; a full pass starts the next at once.
    static let batch = 200
    /// Reads in flight at once: a store's answer takes a few hundred milliseconds.
    static let width = 4

    let refresher: PurchaseRefresher
    let store: EntitlementStore
    let quota: StoreQuota
    let interval: Duration
    let spacingMs: Int64
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64
    let holder = UUID().uuidString

    public init(refresher: PurchaseRefresher, store: EntitlementStore, quota: StoreQuota, interval: Duration, spacingMs: Int64,
                metrics: MerchantMetrics, logger: Logger, now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.refresher = refresher
        self.store = store
        self.quota = quota
        self.interval = interval
        self.spacingMs = spacingMs
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    public func run() async throws {
        let job = self
        try await PeriodicJob(name: "at-risk refresh", interval: interval, logger: logger) { try await job.pass() }.run()
    }

    /// One pass: the due purchases this replica may read now (none when another holds the lease).
    func pass() async throws -> PeriodicJob.Pass {
        let nowMs = now()
        guard try await store.acquireLease(Self.leaseName, holder: holder, ttlMs: Self.leaseTTLMs, nowMs: nowMs) else { return .idle }
        let due = try await store.purchasesAtRisk(sources: PurchaseRefresher.sources.map(\.rawValue), nowMs: nowMs, aheadMs: Self.aheadMs,
                                                  behindMs: Self.behindMs, spacingMs: spacingMs, limit: Self.batch)
        var admitted: [Purchase] = []
        for purchase in due where quota.take(store: purchase.key.source, app: purchase.key.app, calls: PurchaseRefresher.calls(for: purchase)) {
            admitted.append(purchase)
        }
        let deferred = due.count - admitted.count
        metrics.atRiskPass(due: due.count, deferred: deferred)
        let refresher = refresher, store = store, holder = holder, now = now
        await withTaskGroup(of: Void.self) { group in
            var next = admitted.makeIterator()
            // The lease is renewed before each read: a long pass is not run by two replicas at once.
            func start() async -> Bool {
                guard let purchase = next.next(),
                      (try? await store.acquireLease(Self.leaseName, holder: holder, ttlMs: Self.leaseTTLMs, nowMs: now())) == true else { return false }
                // Each outcome is counted and noted by the refresher; a failure waits for its spacing. The
                // projection applies what changed when it gets to it: nothing here waits for it.
                group.addTask { _ = try? await refresher.refresh(purchase, trigger: .atRisk, nowMs: nowMs, waits: false) }
                return true
            }
            for _ in 0..<Self.width { guard await start() else { break } }
            while await group.next() != nil { _ = await start() }
        }
        // A full batch all taken: more may be due now. Anything deferred waits for the quota's next pass.
        return due.count == Self.batch && deferred == 0 ? .moreWaiting : .idle
    }
}
