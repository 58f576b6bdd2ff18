import Events
import Kafka
import Logging
import ServiceLifecycle

/// Consumes `tollgate.events` in the workers' group, in batches: each batch is applied in one store
/// transaction (or re-routed), then its offsets are committed, so a crash redelivers and never loses.
public struct ProjectionService: Service {
    let config: ConsumerConfig
    let topic: String
    let handler: RecordHandler
    let maxBatch: Int
    let logger: Logger

    init(config: ConsumerConfig, topic: String, handler: RecordHandler, maxBatch: Int = 500, logger: Logger) {
        self.config = config
        self.topic = topic
        self.handler = handler
        self.maxBatch = maxBatch
        self.logger = logger
    }

    public func run() async throws {
        try await runConsumer(config, topics: [topic], role: "projection", metrics: handler.metrics, logger: logger) {
            [handler, maxBatch, logger] consumer, lagReporter in
            while !Task.isCancelled {
                await lagReporter.tick()
                // One trip to the poll queue for the whole batch: a trip per record cost more than the store.
                let batch = try await consumer.poll(upTo: maxBatch, timeoutMs: 500)
                guard !batch.isEmpty else { continue }
                let started = ContinuousClock.now
                // Not committed unless handled: on shutdown mid-way the batch is redelivered.
                guard await handler.handle(batch) else { return }
                handler.metrics.batch(size: batch.count, duration: ContinuousClock.now - started)
                do { try await consumer.commitAll(batch) } catch {
                    logger.warning("commit failed; the batch will be redelivered and skipped as duplicates",
                                   metadata: ["error": .string("\(error)")])
                }
            }
        }
    }
}
