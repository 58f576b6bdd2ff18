/// CloudEvents Kafka protocol binding, binary mode: attributes travel as `ce_*` headers,
/// the event JSON is the record value.
public enum CloudEventHeaders {
    public static let specVersion = "ce_specversion"
    public static let id = "ce_id"
    public static let source = "ce_source"
    public static let type = "ce_type"
    public static let subject = "ce_subject"
    public static let time = "ce_time"
    public static let contentType = "content-type"

    /// The headers of one event, in a stable order.
    public static func headers(for event: NormalizedEvent) -> [(name: String, value: String)] {
        [
            (specVersion, "1.0"),
            (id, event.id),
            (source, event.source),
            (type, event.type.cloudEventType),
            (subject, event.subject),
            (time, event.occurredAt),
            (contentType, "application/json"),
        ]
    }
}

/// One event as a CloudEvents binary-mode record for `tollgate.events`: keyed by its subject, the
/// event JSON as value, the `ce_*` headers. The gateway (`DeliveryRecordBuilder`) and the workers'
/// backfills (`Workers/Reconcile`) both build their records from it, so a backfilled event is the
/// record the gateway would have written.
public struct CloudEventRecord: Sendable {
    public let key: String
    public let value: [UInt8]
    public let headers: [(name: String, value: String)]

    public init(_ event: NormalizedEvent) {
        key = event.subject
        value = EventCoding.encode(event)
        headers = CloudEventHeaders.headers(for: event)
    }
}
