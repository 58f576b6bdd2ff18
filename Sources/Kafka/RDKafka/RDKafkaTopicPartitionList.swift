import CRdKafka

/// One partition of one topic: the partition id type of the whole module (assignment, pause,
/// commit, lag).
public struct TopicPartition: Hashable, Sendable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic) [\(partition)]" }
}

/// Owns one `rd_kafka_topic_partition_list_t`: every partition list handed to librdkafka is built
/// here, and freed when this goes. Used inside one client job at a time, so not Sendable.
final class RDKafkaTopicPartitionList {
    /// One element as Swift values (librdkafka fills offsets and per-partition errors in place).
    struct Element {
        var id: TopicPartition
        var offset: Int64
        var error: rd_kafka_resp_err_t
    }

    private let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    /// A list of `entries`, each with its offset (`RD_KAFKA_OFFSET_INVALID` where the call ignores it).
    init(_ entries: [(TopicPartition, offset: Int64)]) {
        guard let list = rd_kafka_topic_partition_list_new(Int32(entries.count)) else {
            // It fails only when malloc does, and librdkafka aborts on that itself.
            preconditionFailure("rd_kafka_topic_partition_list_new failed")
        }
        pointer = list
        for (id, offset) in entries { add(id, offset: offset) }
    }

    /// The partitions without offsets (`RD_KAFKA_OFFSET_INVALID`).
    convenience init(_ partitions: [TopicPartition]) {
        self.init(partitions.map { ($0, offset: Int64(RD_KAFKA_OFFSET_INVALID)) })
    }

    /// Takes over a list librdkafka allocated for the caller (`rd_kafka_assignment`).
    init(taking pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        self.pointer = pointer
    }

    deinit { rd_kafka_topic_partition_list_destroy(pointer) }

    /// Runs `body` with the list, which lives at least until `body` returns (a bare `pointer` read
    /// would let Swift free the list before the C call that uses it).
    func withPointer<R>(_ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> R) -> R {
        withExtendedLifetime(self) { body(pointer) }
    }

    func add(_ id: TopicPartition, offset: Int64) {
        rd_kafka_topic_partition_list_add(pointer, id.topic, id.partition).pointee.offset = offset
    }

    var elements: [Element] { withPointer { Self.elements(of: $0) } }

    /// The first per-partition error librdkafka reported in the list, if any.
    func firstError(context: String) -> KafkaError? { withPointer { Self.firstError(of: $0, context: context) } }

    /// The elements of a list librdkafka still owns (an admin result).
    static func elements(of list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [Element] {
        guard let elements = list.pointee.elems else { return [] }
        return (0..<Int(list.pointee.cnt)).map { index in
            let element = elements[index]
            return Element(id: TopicPartition(topic: String(cString: element.topic), partition: element.partition),
                           offset: element.offset, error: element.err)
        }
    }

    static func firstError(of list: UnsafePointer<rd_kafka_topic_partition_list_t>, context: String) -> KafkaError? {
        elements(of: list).first { $0.error != RD_KAFKA_RESP_ERR_NO_ERROR }.map {
            KafkaError(code: $0.error, context: "\(context) \($0.id)")
        }
    }
}
