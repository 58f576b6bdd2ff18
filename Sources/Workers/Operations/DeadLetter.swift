import Entitlements
import Events
import Foundation
import Kafka

/// A record of the dead-letter topic, decoded for people (`tollgate dlq`, the operator console).
public struct DeadLetter: Sendable {
    public let record: KafkaRecord

    public init(record: KafkaRecord) { self.record = record }

    public var position: String { "\(record.partition):\(record.offset)" }
    public var eventId: String? { record.headers.string(CloudEventHeaders.id) }
    /// `subscription.renewed`, without the CloudEvents prefix.
    public var type: String? { record.headers.string(CloudEventHeaders.type).map { $0.replacingOccurrences(of: "dev.tollgate.", with: "") } }
    public var subject: String? { record.headers.string(CloudEventHeaders.subject) ?? record.keyString }
    public var originalTopic: String? { record.headers.string(SpringHeaders.originalTopic) }
    public var error: String {
        let type = record.headers.string(SpringHeaders.exceptionFQCN) ?? "?"
        return record.headers.string(SpringHeaders.exceptionMessage).map { "\(type): \($0)" } ?? type
    }
    public var time: String { record.timestampMs.map { Timestamp(millisecondsSince1970: $0).rfc3339 } ?? "-" }

    /// Which dead letters a reference names: `partition:offset`, a bare offset (unique across partitions), or a `ce_id`.
    public static func select(_ reference: String, from letters: [DeadLetter]) throws(SelectionError) -> [DeadLetter] {
        let parts = reference.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 2, let partition = Int32(parts[0]), let offset = Int64(parts[1]) {
            let found = letters.filter { $0.record.partition == partition && $0.record.offset == offset }
            guard !found.isEmpty else { throw SelectionError("no dead letter at \(reference)") }
            return found
        }
        if let offset = Int64(reference) {
            let found = letters.filter { $0.record.offset == offset }
            guard found.count <= 1 else {
                throw SelectionError("offset \(offset) exists in partitions \(found.map { String($0.record.partition) }.joined(separator: ", ")): name it as partition:offset")
            }
            if let only = found.first { return [only] }
        }
        let found = letters.filter { $0.eventId == reference }
        guard !found.isEmpty else { throw SelectionError("no dead letter with offset or ce_id \(reference)") }
        return found
    }

    /// Every header, values decoded: Spring's binary ints and timestamps as numbers (and times), the rest as text.
    public var decodedHeaders: [(name: String, value: String)] {
        record.headers.map { header in
            switch header.name {
            case SpringHeaders.attempts, SpringHeaders.originalPartition, SpringHeaders.originalOffset:
                return (header.name, SpringHeaders.integer(header.value).map(String.init) ?? "?")
            case SpringHeaders.backoffTimestamp, SpringHeaders.originalTimestamp:
                return (header.name, SpringHeaders.integer(header.value).map { "\($0) (\(Timestamp(millisecondsSince1970: $0).rfc3339))" } ?? "?")
            default:
                return (header.name, header.stringValue ?? "(null)")
            }
        }
    }

    public var prettyBody: String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(record.value)),
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return String(decoding: record.value, as: UTF8.self) }
        return String(decoding: data, as: UTF8.self)
    }
}

public struct SelectionError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Re-publishes a dead letter to the topic it failed on, each once unless forced (`dlq_replays` in the
/// store): the one replay `tollgate dlq replay` and the console's action share.
public struct DeadLetterReplay: Sendable {
    public enum Outcome: Sendable, Equatable {
        case replayed(to: String)
        case wouldReplay(to: String)
        /// Replayed this many times before; not again without `force`.
        case replayedBefore(Int)
    }

    let store: EntitlementStore
    /// Nil for a dry run.
    let producer: KafkaProducer?
    let eventsTopic: String

    public init(store: EntitlementStore, producer: KafkaProducer?, eventsTopic: String) {
        self.store = store
        self.producer = producer
        self.eventsTopic = eventsTopic
    }

    public func replay(_ letter: DeadLetter, force: Bool, nowMs: Int64) async throws -> Outcome {
        let count = try await store.replayCount(partition: letter.record.partition, offset: letter.record.offset)
        let target = letter.originalTopic ?? eventsTopic
        if count > 0, !force { return .replayedBefore(count) }
        guard let producer else { return .wouldReplay(to: target) }
        let previous = letter.record.headers.string(SpringHeaders.replayCount).flatMap(Int.init) ?? 0
        let headers = letter.record.headers.filter { !SpringHeaders.all.contains($0.name) && $0.name != SpringHeaders.replayCount }
            + [KafkaHeader(name: SpringHeaders.replayCount, string: String(max(previous, count) + 1))]
        _ = try await producer.send(KafkaMessage(topic: target, key: letter.record.key, value: letter.record.value, headers: headers))
        try await store.recordReplay(partition: letter.record.partition, offset: letter.record.offset, eventId: letter.eventId, nowMs: nowMs)
        return .replayed(to: target)
    }
}
