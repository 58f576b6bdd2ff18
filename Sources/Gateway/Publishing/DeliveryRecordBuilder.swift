import Events
import Kafka
import Verifiers

/// Builds the Kafka records of one accepted delivery: the raw body for `raw.<source>` and each event
/// for `events`, or a quarantined one for `quarantine` alone. It sends nothing: `DeliveryWriter`
/// makes the records durable.
public struct DeliveryRecordBuilder: Sendable {
    public let topics: TopicNames

    /// Request headers worth keeping beside the raw body, and those `tollgate replay` needs to verify it
    /// again (Alipay+'s signature covers `Client-Id` and `Request-Time`). Credentials never are.
    public static let keptRequestHeaders = ["content-type", "user-agent", "x-request-id", "x-forwarded-for",
                                            "x-goog-pubsub-message-id", "x-goog-pubsub-publish-time", "x-goog-pubsub-subscription-name",
                                            "client-id", "request-time", "signature"]

    public init(topics: TopicNames) {
        self.topics = topics
    }

    func records(for delivery: AcceptedDelivery, source: SourceName, request: WebhookRequest) -> [KafkaMessage] {
        if let quarantine = delivery.quarantine {
            // No key: nothing downstream groups quarantined deliveries by purchase.
            let headers = [KafkaHeader(name: "tollgate_source", string: source.rawValue),
                           KafkaHeader(name: "tollgate_quarantine_reason", string: quarantine.reason),
                           KafkaHeader(name: "tollgate_quarantine_message", string: quarantine.message),
                           KafkaHeader(name: "tollgate_delivery_id", string: delivery.rawKey)]
                + requestHeaders(request)
            return [KafkaMessage(topic: topics.quarantine, key: nil as [UInt8]?, value: request.body, headers: headers)]
        }
        var rawHeaders: [KafkaHeader] = []
        if let first = delivery.events.first {
            rawHeaders = CloudEventHeaders.headers(for: first)
                .filter { $0.name != CloudEventHeaders.contentType }
                .map { KafkaHeader(name: $0.name, string: $0.value) }
        }
        rawHeaders += requestHeaders(request)

        var messages = [KafkaMessage(topic: topics.raw(source), key: delivery.rawKey, value: request.body, headers: rawHeaders)]
        for event in delivery.events { messages.append(Self.eventRecord(event, topic: topics.events)) }
        return messages
    }

    /// One normalized event as a CloudEvents binary-mode record, keyed by its subject.
    public static func eventRecord(_ event: NormalizedEvent, topic: String) -> KafkaMessage {
        KafkaMessage(topic: topic, key: event.subject, value: EventCoding.encode(event),
                     headers: CloudEventHeaders.headers(for: event).map { KafkaHeader(name: $0.name, string: $0.value) })
    }

    /// The kept request headers (never credentials), when and where the delivery arrived.
    private func requestHeaders(_ request: WebhookRequest) -> [KafkaHeader] {
        var headers: [KafkaHeader] = []
        for name in Self.keptRequestHeaders {
            if let value = request.headers[name] { headers.append(KafkaHeader(name: "http_\(name)", string: value)) }
        }
        headers.append(KafkaHeader(name: "tollgate_received_at", string: request.receivedAt.rfc3339))
        headers.append(KafkaHeader(name: "tollgate_path", string: request.path))
        return headers
    }
}
