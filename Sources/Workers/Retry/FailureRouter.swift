import Entitlements
import Events
import Kafka

/// Where a failed event goes next: the retry tier for its attempt, or the dead-letter topic, with
/// Spring's headers. The record's own headers (CloudEvents) travel with it.
public struct FailureRouter: Sendable {
    public let topics: TopicNames
    public let consumerGroup: String

    public init(topics: TopicNames, consumerGroup: String) {
        self.topics = topics
        self.consumerGroup = consumerGroup
    }

    /// The attempt a record is on: 1 on the events topic, then the value its retry tier carries.
    public static func attempt(of record: KafkaRecord) -> Int {
        record.headers.integer(SpringHeaders.attempts).map { Int(clamping: $0) } ?? 1
    }

    /// The record that carries `record` on after `failure`, and whether it is a dead letter.
    public func route(_ record: KafkaRecord, failure: WorkerFailure, nowMs: Int64) -> (message: KafkaMessage, deadLetter: Bool) {
        let attempt = Self.attempt(of: record)
        var headers = record.headers.filter { !SpringHeaders.all.contains($0.name) }
        // The first failure's position stays the "original" one through every tier (Spring keeps them too).
        let original = record.headers.string(SpringHeaders.originalTopic) == nil
        headers.append(KafkaHeader(name: SpringHeaders.originalTopic,
                                   string: original ? record.topic : record.headers.string(SpringHeaders.originalTopic) ?? record.topic))
        headers.append(KafkaHeader(name: SpringHeaders.originalPartition,
                                   value: original ? SpringHeaders.int32(record.partition) : header(record, SpringHeaders.originalPartition)))
        headers.append(KafkaHeader(name: SpringHeaders.originalOffset,
                                   value: original ? SpringHeaders.int64(record.offset) : header(record, SpringHeaders.originalOffset)))
        let originalTime = record.headers.integer(SpringHeaders.originalTimestamp) ?? record.timestampMs ?? nowMs
        headers.append(KafkaHeader(name: SpringHeaders.originalTimestamp, value: SpringHeaders.bigInteger(originalTime)))
        headers.append(KafkaHeader(name: SpringHeaders.originalConsumerGroup, string: consumerGroup))
        headers.append(KafkaHeader(name: SpringHeaders.exceptionFQCN, string: failure.type))
        headers.append(KafkaHeader(name: SpringHeaders.exceptionMessage, string: failure.message))

        let tier = attempt - 1
        if failure.isTransient, tier < topics.retryDelaysMs.count {
            let delay = topics.retryDelaysMs[tier]
            headers.append(KafkaHeader(name: SpringHeaders.attempts, value: SpringHeaders.int32(Int32(clamping: attempt + 1))))
            headers.append(KafkaHeader(name: SpringHeaders.backoffTimestamp, value: SpringHeaders.bigInteger(nowMs + Int64(delay))))
            return (KafkaMessage(topic: topics.retry(delayMs: delay), key: record.key, value: record.value, headers: headers), false)
        }
        headers.append(KafkaHeader(name: SpringHeaders.attempts, value: SpringHeaders.int32(Int32(clamping: attempt))))
        return (KafkaMessage(topic: topics.deadLetter, key: record.key, value: record.value, headers: headers), true)
    }

    private func header(_ record: KafkaRecord, _ name: String) -> [UInt8]? {
        record.headers.last(where: { $0.name == name })?.value
    }
}
