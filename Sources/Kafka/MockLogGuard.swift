import Synchronization

/// librdkafka's mock cluster keeps at most 5 MiB or 100,000 message sets of a partition and, past
/// either, drops the oldest sets whether or not anyone consumed them (`rd_kafka_mock_msgset_new`,
/// librdkafka 2.0.2). In the process that runs the mock beside its consumers (`tollgate dev`), this
/// guard keeps that from losing a record the producer acknowledged: for the topics those consumers
/// read, every producer built with the guard charges each record it writes to its partition until
/// every consumer group of the topic has committed past it, and a record that would bring a
/// partition's uncommitted records past the budget is refused at once, as a broker that does not
/// acknowledge. The gateway then spools the delivery or answers 503, as when Kafka is down.
///
/// A record's charge is an upper bound of what it adds to the mock's log: its key, value and headers,
/// plus the record's and a whole message set's framing (a set of one record). Offsets this process
/// did not write (another process producing to the same broker) are charged, once seen as a gap in
/// the offsets, at the largest charge the topic has had.
public final class MockLogGuard: Sendable {
    /// `rd_kafka_mock_partition_init`'s limits.
    public static let partitionBytesLimit = 5 * 1024 * 1024
    public static let partitionSetsLimit = 100_000

    /// What a partition may hold uncommitted: four fifths of the limits, so records counted late (a
    /// gap another process left) still fit.
    public let budgetBytes: Int
    public let budgetRecords: Int
    /// The topics whose records wait for a consumer group of this process.
    public let topics: Set<String>
    fileprivate let state: Mutex<[String: TopicLog]>

    public init(topics: Set<String>, budgetBytes: Int = partitionBytesLimit * 4 / 5, budgetRecords: Int = partitionSetsLimit * 4 / 5) {
        self.topics = topics
        self.budgetBytes = budgetBytes
        self.budgetRecords = budgetRecords
        state = Mutex(Dictionary(uniqueKeysWithValues: topics.map { ($0, TopicLog()) }))
    }

    /// What one partition holds that some group of the topic has not committed.
    public struct PartitionUse: Sendable, Equatable {
        public var topic: String
        public var partition: Int32
        public var bytes: Int
        public var records: Int

        public init(topic: String, partition: Int32, bytes: Int, records: Int) {
            self.topic = topic
            self.partition = partition
            self.bytes = bytes
            self.records = records
        }
    }

    /// Every partition written so far of every guarded topic.
    public func usage() -> [PartitionUse] {
        state.withLock { logs in
            logs.sorted { $0.key < $1.key }.flatMap { topic, log in
                log.partitions.keys.sorted().map { partition in
                    let use = log.uncommitted(partition)
                    return PartitionUse(topic: topic, partition: partition, bytes: use.bytes, records: use.records)
                }
            }
        }
    }

    /// Why records of `topics` (the guarded ones among them) are refused now: each partition whose
    /// uncommitted records, with those in flight, leave no room for another of the topic's largest.
    public func refusals(topics asked: [String]) -> [String] {
        state.withLock { logs in
            asked.filter(topics.contains).sorted().flatMap { topic -> [String] in
                guard let log = logs[topic] else { return [] }
                return log.partitions.keys.sorted().compactMap { partition in
                    let use = log.uncommitted(partition)
                    guard !fits(charge: log.largestCharge, use: use, log: log) else { return nil }
                    return "\(topic) partition \(partition) holds \(Self.mebibytes(use.bytes)) MiB (\(use.records) records) the workers "
                        + "have not committed; the embedded broker keeps \(Self.mebibytes(Self.partitionBytesLimit)) MiB a partition"
                }
            }
        }
    }

    private func fits(charge: Int, use: (bytes: Int, records: Int), log: TopicLog) -> Bool {
        use.bytes + log.inFlightBytes + charge <= budgetBytes && use.records + log.inFlightRecords + 1 <= budgetRecords
    }

    /// What a record may add to its partition's log.
    static func charge(_ message: KafkaMessage) -> Int {
        // RecordBatch v2: 61 bytes of set header; a record's own framing (length, attributes, deltas,
        // lengths) at most 36 bytes, and 10 for each header's two lengths.
        100 + (message.key?.count ?? 0) + message.value.count
            + message.headers.reduce(0) { $0 + 10 + $1.name.utf8.count + ($1.value?.count ?? 0) }
    }

    /// Takes room for `message` until its delivery report (`Reserved.release`), or refuses it.
    func reserve(_ message: KafkaMessage) -> Reservation {
        guard topics.contains(message.topic) else { return .notGuarded }
        let charge = Self.charge(message)
        return state.withLock { logs -> Reservation in
            guard let log = logs[message.topic] else { return .notGuarded }
            // Any partition may be the record's (the partitioner picks it): the fullest counts.
            let use = log.fullest()
            guard fits(charge: charge, use: use, log: log) else {
                return .refused(KafkaError(kind: .embeddedBrokerFull, message:
                    "the embedded broker holds \(Self.mebibytes(use.bytes)) MiB (\(use.records) records) of a \(message.topic) partition "
                    + "that its consumers have not committed, near the \(Self.mebibytes(Self.partitionBytesLimit)) MiB it keeps a partition"))
            }
            logs[message.topic]?.taken(charge)
            return .taken(Reserved(owner: self, topic: message.topic, charge: charge))
        }
    }

    enum Reservation {
        case notGuarded
        case taken(Reserved)
        case refused(KafkaError)
    }

    /// One record's room, held from `reserve` to its delivery report.
    struct Reserved: Sendable {
        let owner: MockLogGuard
        let topic: String
        let charge: Int

        /// The report came: the room moves to the record's partition, or is given back.
        func release(_ result: Result<KafkaDelivery, KafkaError>) {
            owner.state.withLock { logs in
                // In place: a copy of the topic's log would copy its charges for every record.
                logs[topic]?.inFlightBytes -= charge
                logs[topic]?.inFlightRecords -= 1
                if case .success(let delivery) = result {
                    logs[topic]?.append(partition: delivery.partition, offset: delivery.offset, charge: charge)
                }
            }
        }
    }

    /// A group of this process reads `topics`: their records wait for its commits from now on.
    func watch(group: String, topics watched: [String]) {
        state.withLock { logs in
            for topic in watched where topics.contains(topic) {
                if logs[topic]?.committed[group] == nil { logs[topic]?.committed[group] = [:] }
            }
        }
    }

    /// `group` committed these next offsets: what every group has committed past no longer counts.
    func committed(group: String, _ offsets: [TopicPartition: Int64]) {
        state.withLock { logs in
            for (id, offset) in offsets where topics.contains(id.topic) {
                logs[id.topic]?.commit(group: group, partition: id.partition, offset: offset)
            }
        }
    }

    static func mebibytes(_ bytes: Int) -> String {
        let tenths = (bytes * 10 + 524_288) / 1_048_576
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// One guarded topic: per partition, the charges of records not committed by every group.
private struct TopicLog {
    struct Partition {
        /// (offset, charge) ascending by offset from `head`, for the offsets at or past the floor; reports
        /// come in offset order per producer, so a record almost always goes at the end.
        var charges: [(offset: Int64, charge: Int)] = []
        var head = 0
        var bytes = 0
        /// The offset after the highest one seen.
        var end: Int64 = 0

        var count: Int { charges.count - head }

        mutating func add(offset: Int64, charge: Int, floor: Int64) {
            end = max(end, offset + 1)
            // Consumed and committed before its report came back: nothing waits for it any more.
            guard offset >= floor else { return }
            var index = charges.count
            while index > head, charges[index - 1].offset > offset { index -= 1 }
            charges.insert((offset, charge), at: index)
            bytes += charge
        }

        /// Drops what every group has committed: linear in what is dropped, not in what is kept.
        mutating func forget(below floor: Int64) {
            while head < charges.count, charges[head].offset < floor {
                bytes -= charges[head].charge
                head += 1
            }
            if head > 1_024, head * 2 > charges.count {
                charges.removeFirst(head)
                head = 0
            }
        }
    }

    var partitions: [Int32: Partition] = [:]
    /// group -> partition -> committed next offset.
    var committed: [String: [Int32: Int64]] = [:]
    var inFlightBytes = 0
    var inFlightRecords = 0
    /// What an offset this process did not write is charged; what the next record is assumed to take.
    var largestCharge = 1_024

    /// The first offset some group still needs: the lowest commit, 0 for a group without one.
    func floor(_ partition: Int32) -> Int64 {
        var lowest: Int64?
        for offsets in committed.values { lowest = min(lowest ?? .max, offsets[partition] ?? 0) }
        return lowest ?? 0
    }

    func uncommitted(_ partition: Int32) -> (bytes: Int, records: Int) {
        guard let log = partitions[partition] else { return (0, 0) }
        let records = Int(max(0, log.end - floor(partition)))
        let unknown = max(0, records - log.count)
        return (log.bytes + unknown * largestCharge, records)
    }

    /// The most bytes and the most records any partition holds uncommitted (not always the same one).
    func fullest() -> (bytes: Int, records: Int) {
        partitions.keys.reduce((bytes: 0, records: 0)) { worst, partition in
            let use = uncommitted(partition)
            return (max(worst.bytes, use.bytes), max(worst.records, use.records))
        }
    }

    mutating func taken(_ charge: Int) {
        inFlightBytes += charge
        inFlightRecords += 1
        largestCharge = max(largestCharge, charge)
    }

    // Both change the partition in place (`default:` and `?.`): a copy would copy its charges.
    mutating func append(partition: Int32, offset: Int64, charge: Int) {
        let floor = floor(partition)
        partitions[partition, default: Partition()].add(offset: offset, charge: charge, floor: floor)
    }

    mutating func commit(group: String, partition: Int32, offset: Int64) {
        let before = floor(partition)
        committed[group, default: [:]][partition] = max(committed[group]?[partition] ?? 0, offset)
        let after = floor(partition)
        if after > before { partitions[partition]?.forget(below: after) }
    }
}
