import Synchronization
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
        let consumer = try KafkaConsumer(config: config, topics: [topic])
        logger.info("projecting", metadata: ["topic": .string(topic), "group": .string(config.groupId)])
        let lagReporter = LagReporter(consumer: consumer, metrics: handler.metrics)
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    await lagReporter.tick()
                    guard let first = try await consumer.poll(timeoutMs: 500) else { continue }
                    var batch = [first]
                    while batch.count < maxBatch, let record = try await consumer.poll(timeoutMs: 0) { batch.append(record) }
                    let started = ContinuousClock.now
                    // Not committed unless handled: on shutdown mid-way the batch is redelivered.
                    guard await handler.handle(batch) else { break }
                    handler.metrics.batch(size: batch.count, duration: ContinuousClock.now - started)
                    do { try await consumer.commitAll(batch) } catch {
                        logger.warning("commit failed; the batch will be redelivered and skipped as duplicates",
                                       metadata: ["error": .string("\(error)")])
                    }
                }
            }
        } catch {
            logger.error("projection consumer failed", metadata: ["error": .string("\(error)")])
            await consumer.close()
            throw error
        }
        await consumer.close()
        logger.info("projection stopped")
    }
}

/// Publishes consumer lag per partition every few seconds.
final class LagReporter: Sendable {
    let consumer: KafkaConsumer
    let metrics: WorkerMetrics
    private let last = Mutex(ContinuousClock.now - .seconds(60))

    init(consumer: KafkaConsumer, metrics: WorkerMetrics) {
        self.consumer = consumer
        self.metrics = metrics
    }

    func tick() async {
        let due = last.withLock { last in
            guard ContinuousClock.now - last >= .seconds(5) else { return false }
            last = ContinuousClock.now
            return true
        }
        guard due else { return }
        for entry in await consumer.lag() {
            if let lag = entry.lag { metrics.lag(topic: entry.topic, partition: entry.partition, lag: lag) }
        }
    }
}
