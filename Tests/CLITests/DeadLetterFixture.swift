import Events
import Foundation
import Kafka
import Merchant
import ProviderAPIs
import Verifiers
import Workers

/// A valid normalized event written straight to the dead-letter topic with the headers the workers'
/// `FailureRouter` writes when a store outage outlasts every retry tier: the case an operator replays.
/// (Making the real workers fail a valid event would need a broken store; the undecodable record the
/// tests also send is dead-lettered by the real workers, and its Spring headers are compared with these.)
struct DeadLetterFixture: Sendable {
    static let app = "cli-app"
    static let product = "pro.yearly"
    static let originalPartition: Int32 = 1
    static let originalOffset: Int64 = 41
    static let attempts: Int32 = 4
    static let failureType = "tollgate.StoreUnavailable"
    static let failureMessage = "database is locked"

    let event: NormalizedEvent
    let failedAtMs: Int64

    init(now: Int64 = Timestamp.now.millisecondsSince1970) {
        let id = UUID().uuidString.lowercased()
        failedAtMs = now - 60_000
        event = NormalizedEvent(
            id: "iaptic:dlq-\(id)", type: .subscriptionRenewed, source: "/iaptic/\(Self.app)", environment: .production,
            app: Self.app, subject: "dlq-\(id)", occurredAt: Timestamp(millisecondsSince1970: failedAtMs).rfc3339,
            receivedAt: Timestamp(millisecondsSince1970: failedAtMs).rfc3339, user: "dlq-user-\(id)", product: Self.product,
            transaction: NormalizedEvent.Transaction(id: "dlq-t-\(id)", originalId: "dlq-\(id)",
                                                     expiresAt: Timestamp(millisecondsSince1970: now + 30 * 86_400_000).rfc3339),
            subscription: NormalizedEvent.Subscription(autoRenew: true, state: "active"), sourceType: "RENEWED")
    }

    var expiresAt: String? { event.transaction?.expiresAt }
    var topicKey: String { "\(Self.app)/production/\(event.user ?? "")/\(Self.product)" }

    /// The dead letter, as `FailureRouter.route` writes it after the last retry tier.
    func message(topics: TopicNames = TopicNames(sources: SenderCatalog.standard.names)) -> KafkaMessage {
        let headers = CloudEventHeaders.headers(for: event).map { KafkaHeader(name: $0.name, string: $0.value) } + [
            KafkaHeader(name: SpringHeaders.originalTopic, string: topics.events),
            KafkaHeader(name: SpringHeaders.originalPartition, value: SpringHeaders.int32(Self.originalPartition)),
            KafkaHeader(name: SpringHeaders.originalOffset, value: SpringHeaders.int64(Self.originalOffset)),
            KafkaHeader(name: SpringHeaders.originalTimestamp, value: SpringHeaders.bigInteger(failedAtMs)),
            KafkaHeader(name: SpringHeaders.originalConsumerGroup, string: "tollgate-workers"),
            KafkaHeader(name: SpringHeaders.exceptionFQCN, string: Self.failureType),
            KafkaHeader(name: SpringHeaders.exceptionMessage, string: Self.failureMessage),
            KafkaHeader(name: SpringHeaders.attempts, value: SpringHeaders.int32(Self.attempts)),
        ]
        return KafkaMessage(topic: topics.deadLetter, key: event.subject, value: EventCoding.encode(event), headers: headers)
    }
}
