import Synchronization

/// Reads one topic without joining a consumer group, for operator tools (listing, exporting or
/// replaying a dead-letter topic): partitions are assigned directly, offsets are never committed,
/// so reading changes nothing on the cluster. One `read` at a time per reader.
public final class TopicReader: Sendable {
    public let topic: String
    /// Metadata and offset queries and polls all block: they run on the client's worker.
    let client: RDKafkaConsumerClient
    let requestTimeoutMs: Int32
    let reading = Mutex(false)

    /// `requestTimeoutMs` bounds each metadata or offset query.
    public init(client: KafkaClientConfig, topic: String, requestTimeoutMs: Int32 = 10_000) throws(KafkaError) {
        self.topic = topic
        self.requestTimeoutMs = requestTimeoutMs
        self.client = try RDKafkaConsumerClient(properties: client.readerProperties, subscribing: nil, role: "topic reader")
    }

    /// The topic's partition ids, ascending, from cluster metadata. Throws if the topic is unknown.
    public func partitions() async throws(KafkaError) -> [Int32] {
        try await client.partitions(of: topic, timeoutMs: requestTimeoutMs)
    }

    /// The oldest offset still stored and the offset the next record will get.
    /// `low == high` means the partition holds no record.
    public func watermarks(partition: Int32) async throws(KafkaError) -> (low: Int64, high: Int64) {
        try await client.watermarks(TopicPartition(topic: topic, partition: partition), timeoutMs: requestTimeoutMs)
    }

    /// The offset of the first record whose timestamp is at or after `timestampMs` (ms since 1970;
    /// negative counts as 0). When no record is that recent (Kafka answers -1, "end"), this is the
    /// high watermark, so reading from it yields only records written later.
    public func offset(forTimestampMs timestampMs: Int64, partition: Int32) async throws(KafkaError) -> Int64 {
        try await client.offset(forTimestampMs: timestampMs, TopicPartition(topic: topic, partition: partition), timeoutMs: requestTimeoutMs)
    }

    /// Leaves the cluster. Later calls throw `.closed`; a `read` in progress ends with `.closed`.
    public func close() async {
        await client.close()
    }
}
