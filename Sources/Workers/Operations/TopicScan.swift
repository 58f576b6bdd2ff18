import Events
import Kafka
import Synchronization

/// Reads a whole topic (from `sinceMs` when given) up to its current end: what `tollgate dlq`, `tollgate
/// replay` and the operator console's dead letters read.
public enum TopicScan {
    /// The records, oldest first, and a sentence per partition that lost records the range asked for may
    /// have held (`gaps`), so no one is answered with less without a word.
    ///
    /// Filters by record time as it reads rather than seeking by timestamp: the embedded broker (librdkafka's
    /// mock) answers every timestamp lookup with the end of the partition. A partition whose oldest kept
    /// offset is above 0 lost its first records (a real cluster's retention, or the embedded broker's
    /// in-memory limit): a gap is reported when the range asked for may have held some of them (no
    /// `sinceMs`, or a `sinceMs` before the oldest record kept).
    public static func records(client: KafkaClientConfig, topic: String, sinceMs: Int64? = nil) async throws
        -> (records: [KafkaRecord], gaps: [String]) {
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
        var gaps: [String] = []
        let first = firstRead.withLock { $0 }
        for (partition, kept) in first.sorted(by: { $0.key < $1.key }) where kept.offset > 0 {
            // Asked from a time after the oldest record kept (when its time is known): nothing asked for is gone.
            if let sinceMs, let oldest = kept.timestampMs, sinceMs >= oldest { continue }
            let written = kept.timestampMs.map { ", written \(Timestamp(millisecondsSince1970: $0).rfc3339)" } ?? ""
            gaps.append("\(topic) partition \(partition) keeps offsets from \(kept.offset) on (the oldest\(written)): "
                        + "offsets 0-\(kept.offset - 1) are gone (a cluster's retention, or the embedded broker's in-memory limit), "
                        + "so the range asked for may be missing some")
        }
        for (partition, low) in emptied.sorted(by: { $0.key < $1.key }) where first[partition] == nil {
            gaps.append("\(topic) partition \(partition) holds no record: offsets 0-\(low - 1) are gone "
                        + "(a cluster's retention, or the embedded broker's in-memory limit)")
        }
        let records = collector.all.sorted { ($0.timestampMs ?? 0, $0.partition, $0.offset) < ($1.timestampMs ?? 0, $1.partition, $1.offset) }
        return (records, gaps)
    }
}

extension TopicScan {
    /// The one record at `partition:offset`, nil when the topic no longer keeps it (retention) or never
    /// held it. Reads that partition from the offset and no other: a fetch, not a scan.
    public static func record(client: KafkaClientConfig, topic: String, partition: Int32, offset: Int64) async throws -> KafkaRecord? {
        let reader = try TopicReader(client: client, topic: topic)
        let partitions = try await reader.partitions()
        guard partitions.contains(partition), offset >= 0 else {
            await reader.close()
            return nil
        }
        let (low, high) = try await reader.watermarks(partition: partition)
        guard offset >= low, offset < high else {
            await reader.close()
            return nil
        }
        var start: [Int32: Int64] = [:]
        for each in partitions { start[each] = each == partition ? offset : -1 }
        let collector = RecordCollector()
        do {
            try await reader.read(from: start) { record in
                guard record.partition == partition else { return true }
                if record.offset == offset { collector.append(record) }
                return false
            }
        } catch {
            await reader.close()
            throw error
        }
        await reader.close()
        return collector.all.first
    }
}

/// Gathers records from a reader's handler (which may run on another thread).
final class RecordCollector: Sendable {
    private let records = Mutex<[KafkaRecord]>([])

    func append(_ record: KafkaRecord) { records.withLock { $0.append(record) } }
    var all: [KafkaRecord] { records.withLock { $0 } }
}
