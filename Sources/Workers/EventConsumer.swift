import Events
import Kafka
import Logging
import Metrics
import ServiceLifecycle

/// Consumes `tollgate.events` in the workers' consumer group, hands each decoded event to a
/// handler, and commits its offset only after the handler returned (at-least-once).
public struct EventConsumer: Service {
    public typealias Handler = @Sendable (NormalizedEvent, KafkaRecord) async throws -> Void

    private let config: ConsumerConfig
    private let topics: TopicNames
    private let handler: Handler
    private let logger: Logger

    public init(config: ConsumerConfig, topics: TopicNames, logger: Logger, handler: @escaping Handler) {
        self.config = config
        self.topics = topics
        self.logger = logger
        self.handler = handler
    }

    public func run() async throws {
        let consumer = try KafkaConsumer(config: config, topics: [topics.events])
        logger.info("consuming", metadata: ["topic": .string(topics.events), "group": .string(config.groupId)])
        do {
            try await cancelWhenGracefulShutdown {
                while let record = try await consumer.next() {
                    // Not committed until handled: on shutdown mid-retry it is redelivered.
                    guard await process(record) else { break }
                    do { try await consumer.commit(record) } catch {
                        logger.warning("commit failed; the record will be redelivered", metadata: ["error": .string("\(error)")])
                    }
                }
            }
        } catch {
            logger.error("consumer failed", metadata: ["error": .string("\(error)")])
            await consumer.close()
            throw error
        }
        await consumer.close()
        logger.info("consumer stopped")
    }

    /// Handles one record; false when shutdown interrupted its retries (it must not be committed).
    /// An undecodable record can never succeed: it is counted, logged with its position (it stays
    /// in the topic for inspection) and passed over, so it cannot block its partition.
    private func process(_ record: KafkaRecord) async -> Bool {
        let event: NormalizedEvent
        do {
            event = try EventCoding.decode(record.value)
        } catch {
            Counter(label: "tollgate_worker_undecodable_total").increment()
            logger.error("undecodable event passed over", metadata: [
                "topic": .string(record.topic), "partition": .stringConvertible(record.partition),
                "offset": .stringConvertible(record.offset)])
            return true
        }
        var delay = Duration.milliseconds(100)
        while true {
            do {
                try await handler(event, record)
                Counter(label: "tollgate_worker_events_total", dimensions: [("type", event.type.rawValue)]).increment()
                return true
            } catch {
                Counter(label: "tollgate_worker_handler_failures_total").increment()
                logger.error("event handler failed; retrying", metadata: [
                    "ce_id": .string(event.id), "error": .string("\(error)"), "retry_in_ms": .stringConvertible(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)])
                do { try await Task.sleep(for: delay) } catch { return false }
                delay = min(delay * 2, .seconds(30))
            }
        }
    }
}
