import Events
import Kafka

/// Where the merchant features publish the events they make on `tollgate.events` (a reported purchase,
/// a backfilled notification, the refund a provider answered): the workers' Kafka producer, or in tests
/// anything that records them, so purchase logic is tested without a broker.
public protocol EventPublisher: Sendable {
    /// Returns once every event is durable (the producer's `acks=all`); throws when any is not.
    func publish(_ events: [NormalizedEvent]) async throws
}

/// Publishes each event as the gateway writes it (`CloudEventRecord`) with the workers' producer.
public struct KafkaEventPublisher: EventPublisher {
    let producer: KafkaProducer
    let topic: String

    public init(producer: KafkaProducer, topic: String) {
        self.producer = producer
        self.topic = topic
    }

    public func publish(_ events: [NormalizedEvent]) async throws {
        _ = try await producer.sendAll(events.map { CloudEventRecord.message($0, topic: topic) })
    }
}
