import Entitlements
import Events
import Gateway
import Logging
import ServiceLifecycle
import Workers

/// One worker instance as `tollgate work` runs it: `EntitlementWorkers` (its own producer and
/// consumers in the harness's consumer group) in a ServiceGroup, counting into metrics of its own.
/// The store is the test's: the instance leaves it open.
final class RunningWorkers: Sendable {
    let workers: EntitlementWorkers
    let metrics = RecordingMetrics()
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    /// `clock`: the expiry sweeper's time, with ends noticed within `expiryPublishDelayMs` of it.
    /// `consumption`: the apps whose consumption requests the instance answers; `playAPI`: the Play
    /// enrichment (Google events confirmed against a local Google), none by default.
    init(harness: WorkerHarness, store: EntitlementStore, expiryPublishDelayMs: Int = 60_000,
         clock: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
         consumption: ConsumptionAnswering? = nil, playAPI: GooglePlayEnricher? = nil, checkouts: CheckoutSetup? = nil) throws {
        workers = try EntitlementWorkers(client: harness.client, topics: harness.topics, consumerGroup: WorkerHarness.consumerGroup,
                                         store: store, playAPI: playAPI, consumption: consumption, expiryPublishDelayMs: expiryPublishDelayMs, clock: clock, checkouts: checkouts,
                                         metrics: WorkerMetrics(factory: metrics), logger: harness.logger)
        group = ServiceGroup(services: [workers], logger: harness.logger)
        running = Task { [group] in try await group.run() }
    }

    /// A graceful shutdown, as on SIGTERM: the batch in hand is finished and committed, the group is left.
    /// Safe to call again.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
