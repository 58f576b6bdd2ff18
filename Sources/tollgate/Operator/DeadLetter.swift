import ArgumentParser
import Events
import Foundation
import Kafka
import Synchronization
import Workers

/// A record of the dead-letter topic, decoded for people.
struct DeadLetter: Sendable {
    let record: KafkaRecord

    var position: String { "\(record.partition):\(record.offset)" }
    var eventId: String? { record.headers.string(CloudEventHeaders.id) }
    /// `subscription.renewed`, without the CloudEvents prefix.
    var type: String? { record.headers.string(CloudEventHeaders.type).map { $0.replacingOccurrences(of: "dev.tollgate.", with: "") } }
    var subject: String? { record.headers.string(CloudEventHeaders.subject) ?? record.keyString }
    var originalTopic: String? { record.headers.string(SpringHeaders.originalTopic) }
    var error: String {
        let type = record.headers.string(SpringHeaders.exceptionFQCN) ?? "?"
        return record.headers.string(SpringHeaders.exceptionMessage).map { "\(type): \($0)" } ?? type
    }
    var time: String { record.timestampMs.map { Timestamp(millisecondsSince1970: $0).rfc3339 } ?? "-" }

    /// The dead letters `references` name (every one when nil), each once even when named twice (by
    /// position and by ce_id); a reference that names none exits 1.
    static func load(_ references: [String]?, client: KafkaClientConfig, topic: String) async throws -> [DeadLetter] {
        let letters = try await TopicScan.records(client: client, topic: topic).map(DeadLetter.init)
        guard let references else { return letters }
        var selected: [DeadLetter] = []
        do {
            for reference in references { selected += try select(reference, from: letters) }
        } catch {
            Output.error("tollgate: \(error)")
            throw ExitCode(1)
        }
        var named = Set<String>()
        return selected.filter { named.insert($0.position).inserted }
    }

    /// Which dead letters a reference names: `partition:offset`, a bare offset (unique across partitions), or a `ce_id`.
    static func select(_ reference: String, from letters: [DeadLetter]) throws(SelectionError) -> [DeadLetter] {
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
    var decodedHeaders: [(name: String, value: String)] {
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

    var prettyBody: String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(record.value)),
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return String(decoding: record.value, as: UTF8.self) }
        return String(decoding: data, as: UTF8.self)
    }
}

struct SelectionError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Reads a whole topic (from `sinceMs` when given) up to its current end.
enum TopicScan {
    /// Filters by record time as it reads rather than seeking by timestamp: the embedded broker (librdkafka's
    /// mock) answers every timestamp lookup with the end of the partition.
    ///
    /// A partition whose oldest kept offset is above 0 lost its first records (a real cluster's retention,
    /// or the embedded broker's in-memory limit): when the range asked for may have held some of them (no
    /// `sinceMs`, or a `sinceMs` before the oldest record kept), a line on standard error says so, rather
    /// than answering with less without a word (`reportGaps`).
    static func records(client: KafkaClientConfig, topic: String, sinceMs: Int64? = nil, reportGaps: Bool = true) async throws -> [KafkaRecord] {
        let reader = try TopicReader(client: client, topic: topic)
        // A partition whose every record is gone is not read at all: its low watermark tells.
        var emptied: [Int32: Int64] = [:]
        for partition in try await reader.partitions() {
            let (low, high) = try await reader.watermarks(partition: partition)
            if low > 0, low == high { emptied[partition] = low }
        }
        let collector = RecordCollector()
        // The first record each partition delivered: its offset says whether earlier ones are gone,
        // whatever the watermarks were when asked (retention may move them while this reads).
        let firstRead = Mutex<[Int32: (offset: Int64, timestampMs: Int64?)]>([:])
        try await reader.read { record in
            firstRead.withLock { first in
                if first[record.partition] == nil { first[record.partition] = (record.offset, record.timestampMs) }
            }
            if let sinceMs, (record.timestampMs ?? 0) < sinceMs { return true }
            collector.append(record)
            return true
        }
        await reader.close()
        if reportGaps {
            let first = firstRead.withLock { $0 }
            for (partition, kept) in first.sorted(by: { $0.key < $1.key }) where kept.offset > 0 {
                // Asked from a time after the oldest record kept (when its time is known): nothing asked for is gone.
                if let sinceMs, let oldest = kept.timestampMs, sinceMs >= oldest { continue }
                let written = kept.timestampMs.map { ", written \(Timestamp(millisecondsSince1970: $0).rfc3339)" } ?? ""
                Output.error("tollgate: \(topic) partition \(partition) keeps offsets from \(kept.offset) on (the oldest\(written)): "
                             + "offsets 0-\(kept.offset - 1) are gone (a cluster's retention, or the embedded broker's in-memory limit), "
                             + "so the range asked for may be missing some")
            }
            for (partition, low) in emptied.sorted(by: { $0.key < $1.key }) where first[partition] == nil {
                Output.error("tollgate: \(topic) partition \(partition) holds no record: offsets 0-\(low - 1) are gone "
                             + "(a cluster's retention, or the embedded broker's in-memory limit)")
            }
        }
        return collector.all.sorted { ($0.timestampMs ?? 0, $0.partition, $0.offset) < ($1.timestampMs ?? 0, $1.partition, $1.offset) }
    }
}
