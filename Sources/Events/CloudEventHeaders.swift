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
