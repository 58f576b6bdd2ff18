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

    /// The next batch of up to `maxBatch` records (empty after 500 ms without any), decoded and enriched,
    /// with the iterator to take the following one from; nil once the consumer closed. The iterator
    /// travels by value, so the loop can fetch the next batch in a child task while it applies this one.
    private static func fetch(_ batches: KafkaRecordBatches.Iterator, handler: RecordHandler)
        async throws -> (batch: EventProcessor.Prepared, rest: KafkaRecordBatches.Iterator)? {
        var batches = batches
        guard let records = try await batches.next() else { return nil }
        return (await handler.processor.prepare(records), batches)
    }

    public func run() async throws {
        try await runConsumer(config, topics: [topic], role: "projection", metrics: handler.metrics, logger: logger) {
            [handler, maxBatch, logger] consumer, lagReporter in
            var fetched = try await Self.fetch(consumer.batches(maxRecords: maxBatch, idleTimeoutMs: 500).makeAsyncIterator(), handler: handler)
            while let (batch, rest) = fetched, !Task.isCancelled {
                // The next batch is polled and decoded while this one is applied: decoding is CPU work on the
                // pool, applying waits on the store's thread. Only this loop applies and commits, in order.
                async let following = Self.fetch(rest, handler: handler)
                if !batch.records.isEmpty {
                    let started = ContinuousClock.now
                    // Not committed unless handled: on shutdown mid-way the batch is redelivered.
                    guard await handler.handle(batch) == .done else { return }
                    handler.metrics.batch(size: batch.records.count, duration: ContinuousClock.now - started)
                    do { try await consumer.commitAll(batch.records) } catch {
                        logger.warning("commit failed; the batch will be redelivered and skipped as duplicates",
                                       metadata: ["error": .string("\(error)")])
                    }
                }
                await lagReporter.tick()
                fetched = try await following
            }
        }
    }
}
