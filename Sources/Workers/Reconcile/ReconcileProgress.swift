import Events
import Kafka

/// One scope of a reconciliation run (an app and environment, a package), as it goes.
public struct ReconcileProgress: Sendable, Equatable {
    public var scope: String
    public var pages = 0
    /// Items read: Apple notifications, Google voided purchases.
    public var items = 0
    /// Published (or, in a dry run, that would be): not processed yet.
    public var new = 0
    public var known = 0
    public var rejected = 0
    public var rateLimitWaits = 0
    /// Why the scope stopped before its end; nil when it reached it.
    public var failure: String?

    public init(scope: String) { self.scope = scope }
}

/// Why a scope stopped before its end; its checkpoint stays at the last page published.
struct ReconcileStopped: Error {
    let message: String
    /// The store no longer takes the saved page token: the window is read again from its start.
    var restartsWindow = false
}

extension CloudEventRecord {
    /// The record the gateway would have written for `event` (`DeliveryRecordBuilder.eventRecord`).
    static func message(_ event: NormalizedEvent, topic: String) -> KafkaMessage {
        let record = CloudEventRecord(event)
        return KafkaMessage(topic: topic, key: record.key, value: record.value,
                            headers: record.headers.map { KafkaHeader(name: $0.name, string: $0.value) })
    }
}
