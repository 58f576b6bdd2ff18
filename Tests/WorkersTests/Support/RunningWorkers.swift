import Gateway
import Logging
import ServiceLifecycle
import Store
import Workers

/// One worker instance as `tollgate work` runs it: `EntitlementWorkers` (its own producer and
/// consumers in the harness's consumer group) with the producer's service, in a ServiceGroup, counting
/// into metrics of its own.
final class RunningWorkers: Sendable {
    let workers: EntitlementWorkers
    let metrics = RecordingMetrics()
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    init(harness: WorkerHarness, store: EntitlementStore) throws {
        workers = try EntitlementWorkers(client: harness.client, topics: harness.topics, consumerGroup: WorkerHarness.consumerGroup,
                                         store: store, metrics: WorkerMetrics(factory: metrics), logger: harness.logger)
        // The producer's service first, as in `tollgate work`: it is shut down last and flushes what the others sent.
        group = ServiceGroup(services: [workers.producer as any Service] + workers.services, logger: harness.logger)
        running = Task { [group] in try await group.run() }
    }

    /// A graceful shutdown, as on SIGTERM: the batch in hand is finished and committed, the group is left.
    /// Safe to call again.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await running.value
    }
}
