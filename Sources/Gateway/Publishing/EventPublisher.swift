import Events
import Kafka
import Verifiers

/// Publishes one accepted delivery: the raw body to `raw.<source>` and each event to `events`,
/// returning only when every record has its delivery report (acks=all).
public struct EventPublisher: Sendable {
    public let producer: KafkaProducer
    public let topics: TopicNames

    /// Request headers worth keeping beside the raw body. Credentials never are.
    static let keptRequestHeaders = ["content-type", "user-agent", "x-request-id", "x-forwarded-for"]

    public init(producer: KafkaProducer, topics: TopicNames) {
        self.producer = producer
        self.topics = topics
    }

    public func publish(_ delivery: AcceptedDelivery, source: SourceName, request: WebhookRequest) async throws(KafkaError) {
        try await producer.sendAll(messages(for: delivery, source: source, request: request))
    }

    func messages(for delivery: AcceptedDelivery, source: SourceName, request: WebhookRequest) -> [KafkaMessage] {
        var rawHeaders: [KafkaHeader] = []
        if let first = delivery.events.first {
            rawHeaders = CloudEventHeaders.headers(for: first)
                .filter { $0.name != CloudEventHeaders.contentType }
                .map { KafkaHeader(name: $0.name, string: $0.value) }
        }
        for name in Self.keptRequestHeaders {
            if let value = request.headers[name] { rawHeaders.append(KafkaHeader(name: "http_\(name)", string: value)) }
        }
        rawHeaders.append(KafkaHeader(name: "tollgate_received_at", string: request.receivedAt.rfc3339))
        rawHeaders.append(KafkaHeader(name: "tollgate_path", string: request.path))

        var messages = [KafkaMessage(topic: topics.raw(source), key: delivery.rawKey, value: request.body, headers: rawHeaders)]
        for event in delivery.events {
            messages.append(KafkaMessage(
                topic: topics.events, key: event.subject, value: EventCoding.encode(event),
                headers: CloudEventHeaders.headers(for: event).map { KafkaHeader(name: $0.name, string: $0.value) }))
        }
        return messages
    }
}
