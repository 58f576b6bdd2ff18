import Events
import Kafka
import Logging
import ServiceLifecycle

/// Consumes every retry tier. A record whose backoff time has not come pauses its partition (seeked
/// back to it) until then; the poll loop never sleeps on it, so other partitions keep flowing.
public struct RetryService: Service {
    let config: ConsumerConfig
    let topics: [String]
    let handler: RecordHandler
    let logger: Logger

    init(config: ConsumerConfig, topics: [String], handler: RecordHandler, logger: Logger) {
        self.config = config
        self.topics = topics
        self.handler = handler
        self.logger = logger
    }

    /// How long a record the embedded broker's next tier refused waits before it is tried again.
    static let fullTierPauseMs: Int64 = 1_000

    public func run() async throws {
        guard !topics.isEmpty else { return }
        try await runConsumer(config, topics: topics, role: "retry consumer", metrics: handler.metrics, logger: logger) {
            [handler, logger] consumer, lagReporter in
            // One record at a time: a record not due yet pauses its partition before the next is taken.
            var records = consumer.batches(maxRecords: 1).makeAsyncIterator()
            var paused: [TopicPartition: Int64] = [:]
            while !Task.isCancelled {
                await lagReporter.tick()
                let now = handler.processor.now()
                for (id, due) in paused where due <= now {
                    paused[id] = nil
                    try await consumer.resume(topic: id.topic, partition: id.partition)
                }
                let wait = paused.values.min().map { Int32(clamping: max(0, min($0 - now, 200))) } ?? 200
                guard let batch = try await records.next(waitingAtMostMs: wait) else { return }
                guard let record = batch.first else { continue }
                let due = record.headers.integer(SpringHeaders.backoffTimestamp) ?? 0
                if due > handler.processor.now() {
                    let id = TopicPartition(topic: record.topic, partition: record.partition)
                    try await consumer.pause(topic: id.topic, partition: id.partition)
                    try await consumer.seek(topic: id.topic, partition: id.partition, offset: record.offset)
                    paused[id] = due
                    continue
                }
                switch await handler.handle([record], waitWhenFull: false) {
                case .done: break
                case .stopped: return
                case .brokerFull:
                    // The next tier is full on the embedded broker: this record waits (uncommitted, its
                    // partition paused) while the loop goes on draining the other tiers, which makes room.
                    let id = TopicPartition(topic: record.topic, partition: record.partition)
                    try await consumer.pause(topic: id.topic, partition: id.partition)
                    try await consumer.seek(topic: id.topic, partition: id.partition, offset: record.offset)
                    paused[id] = handler.processor.now() + Self.fullTierPauseMs
                    continue
                }
                do { try await consumer.commitAll([record]) } catch {
                    logger.warning("commit failed; the record will be redelivered", metadata: ["error": .string("\(error)")])
                }
            }
        }
    }
}
