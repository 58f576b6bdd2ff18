import Events
import Kafka
import Verifiers

/// Builds the Kafka records of one accepted delivery: the raw body for `raw.<source>` and each event
/// for `events`, or a quarantined one for `quarantine` alone. It sends nothing: `DeliveryWriter`
/// makes the records durable.
public struct DeliveryRecordBuilder: Sendable {
    public let topics: TopicNames

    /// Request headers worth keeping beside every raw body; each sender adds its own
    /// (`SenderDefinition.keptRequestHeaders`). Credentials never are.
    public static let commonRequestHeaders = ["content-type", "user-agent", "x-request-id", "x-forwarded-for"]
    /// Per sender: the common headers and its own.
    private let keptRequestHeaders: [SourceName: [String]]

    public init(topics: TopicNames, senders: SourceRegistry) {
        self.topics = topics
        keptRequestHeaders = Dictionary(uniqueKeysWithValues: senders.senders.map {
            ($0.source.name, Self.commonRequestHeaders + $0.keptRequestHeaders)
        })
    }

    public func records(for delivery: AcceptedDelivery, source: SourceName, request: WebhookRequest) -> [KafkaMessage] {
        if let quarantine = delivery.quarantine {
            // No key: nothing downstream groups quarantined deliveries by purchase.
            let headers = [KafkaHeader(name: "tollgate_source", string: source.rawValue),
                           KafkaHeader(name: "tollgate_quarantine_reason", string: quarantine.reason),
                           KafkaHeader(name: "tollgate_quarantine_message", string: quarantine.message),
                           KafkaHeader(name: "tollgate_delivery_id", string: delivery.rawKey)]
                + requestHeaders(request, source: source)
            return [KafkaMessage(topic: topics.quarantine, key: nil as [UInt8]?, value: delivery.keptBody ?? request.body, headers: headers)]
        }
        var rawHeaders: [KafkaHeader] = []
        if let first = delivery.events.first {
            rawHeaders = CloudEventHeaders.headers(for: first)
                .filter { $0.name != CloudEventHeaders.contentType }
                .map { KafkaHeader(name: $0.name, string: $0.value) }
            // What forward webhook endpoints are routed by (docs/outbound-webhooks.md).
            rawHeaders += [KafkaHeader(name: RawRecordHeaders.app, string: first.app),
                           KafkaHeader(name: RawRecordHeaders.environment, string: first.environment.rawValue)]
            if delivery.events.count > 1 {
                rawHeaders.append(KafkaHeader(name: RawRecordHeaders.eventIds, string: JSONText.array(delivery.events.map(\.id))))
            }
        }
        rawHeaders += requestHeaders(request, source: source)
        if let scope = delivery.authenticatedScope {
            rawHeaders.append(KafkaHeader(name: RawRecordHeaders.authenticatedScope, string: scope))
        }

        // The sender's kept body when it removed a credential from it (Iaptic's password), else the exact bytes.
        var messages = [KafkaMessage(topic: topics.raw(source), key: delivery.rawKey, value: delivery.keptBody ?? request.body,
                                     headers: rawHeaders)]
        for event in delivery.events { messages.append(Self.eventRecord(event, topic: topics.events)) }
        return messages
    }

    /// One normalized event as a CloudEvents binary-mode record, keyed by its subject.
    public static func eventRecord(_ event: NormalizedEvent, topic: String) -> KafkaMessage {
        let record = CloudEventRecord(event)
        return KafkaMessage(topic: topic, key: record.key, value: record.value,
                            headers: record.headers.map { KafkaHeader(name: $0.name, string: $0.value) })
    }

    /// The kept request headers (never credentials), when and where the delivery arrived.
    private func requestHeaders(_ request: WebhookRequest, source: SourceName) -> [KafkaHeader] {
        var headers: [KafkaHeader] = []
        for name in keptRequestHeaders[source] ?? Self.commonRequestHeaders {
            if let value = request.headers[name] { headers.append(KafkaHeader(name: RawRecordHeaders.requestHeaderPrefix + name, string: value)) }
        }
        headers.append(KafkaHeader(name: RawRecordHeaders.receivedAt, string: request.receivedAt.rfc3339))
        headers.append(KafkaHeader(name: RawRecordHeaders.path, string: request.path))
        return headers
    }
}
