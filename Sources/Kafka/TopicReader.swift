import CRdKafka
import Dispatch
import Synchronization

/// Reads one topic without joining a consumer group, for operator tools (listing, exporting or
/// replaying a dead-letter topic): partitions are assigned directly, offsets are never committed,
/// so reading changes nothing on the cluster. One `read` at a time per reader.
public final class TopicReader: Sendable {
    public let topic: String
    let handle: RDKafkaHandle
    /// Metadata and offset queries and polls all block: they run here, never on the Swift pool.
    let queue = DispatchQueue(label: "kafka-topic-reader")
    let requestTimeoutMs: Int32
    let state = Mutex(State.idle)

    enum State { case idle, reading, closed }

    /// `requestTimeoutMs` bounds each metadata or offset query.
    public init(client: KafkaClientConfig, topic: String, requestTimeoutMs: Int32 = 10_000) throws(KafkaError) {
        self.topic = topic
        self.requestTimeoutMs = requestTimeoutMs
        handle = try RDKafkaHandle(type: RD_KAFKA_CONSUMER, properties: client.readerProperties)
        // Client errors and logs arrive through the consumer queue that `read` polls.
        rd_kafka_poll_set_consumer(handle.pointer)
    }

    /// The topic's partition ids, ascending, from cluster metadata. Throws if the topic is unknown.
    public func partitions() async throws(KafkaError) -> [Int32] {
        try await onQueue { [self] in fetchPartitions() }
    }

    /// The oldest offset still stored and the offset the next record will get.
    /// `low == high` means the partition holds no record.
    public func watermarks(partition: Int32) async throws(KafkaError) -> (low: Int64, high: Int64) {
        try await onQueue { [self] in queryWatermarks(partition) }
    }

    /// The offset of the first record whose timestamp is at or after `timestampMs` (ms since 1970;
    /// negative counts as 0). When no record is that recent (Kafka answers -1, "end"), this is the
    /// high watermark, so reading from it yields only records written later.
    public func offset(forTimestampMs timestampMs: Int64, partition: Int32) async throws(KafkaError) -> Int64 {
        try await onQueue { [self] in
            let found: Result<Int64, KafkaError> = withPartitionList([(topic, partition, max(0, timestampMs))]) { list in
                let err = rd_kafka_offsets_for_times(handle.pointer, list, requestTimeoutMs)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR { return .failure(KafkaError(code: err, context: "offsets for times \(topic)")) }
                if let error = firstPartitionError(list, context: "offsets for times") { return .failure(error) }
                return .success(partitionElements(list).first?.offset ?? Int64(RD_KAFKA_OFFSET_END))
            }
            guard case .success(let offset) = found, offset == Int64(RD_KAFKA_OFFSET_END) else { return found }
            return queryWatermarks(partition).map(\.high)
        }
    }

    /// Leaves the cluster. Later calls throw `.closed`; a `read` in progress ends with `.closed`.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wasClosed = state.withLock { value in
                defer { value = .closed }
                return value == .closed
            }
            queue.async { [handle] in
                if !wasClosed { _ = rd_kafka_consumer_close(handle.pointer) }
                continuation.resume()
            }
        }
    }

    /// Runs blocking librdkafka work on the reader's queue unless the reader is closed.
    func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> Result<T, KafkaError>) async throws(KafkaError) -> T {
        let result: Result<T, KafkaError> = await withCheckedContinuation { continuation in
            queue.async { [self] in
                guard state.withLock({ $0 != .closed }) else {
                    continuation.resume(returning: .failure(KafkaError(kind: .closed, message: "topic reader is closed")))
                    return
                }
                continuation.resume(returning: body())
            }
        }
        return try result.get()
    }

    func fetchPartitions() -> Result<[Int32], KafkaError> {
        guard let rkt = rd_kafka_topic_new(handle.pointer, topic, nil) else {
            return .failure(KafkaError(code: rd_kafka_last_error(), context: "topic \(topic)"))
        }
        defer { rd_kafka_topic_destroy(rkt) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(handle.pointer, 0, rkt, &metadata, requestTimeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            return .failure(KafkaError(code: err, context: "metadata for \(topic)"))
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        let topics = UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt))
        guard let entry = topics.first(where: { String(cString: $0.topic) == topic }) else {
            return .failure(KafkaError(code: RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, context: "metadata for \(topic)"))
        }
        if entry.err != RD_KAFKA_RESP_ERR_NO_ERROR {
            return .failure(KafkaError(code: entry.err, context: "metadata for \(topic)"))
        }
        let partitions = UnsafeBufferPointer(start: entry.partitions, count: Int(entry.partition_cnt))
        return .success(partitions.map(\.id).sorted())
    }

    func queryWatermarks(_ partition: Int32) -> Result<(low: Int64, high: Int64), KafkaError> {
        var low: Int64 = 0
        var high: Int64 = 0
        let err = rd_kafka_query_watermark_offsets(handle.pointer, topic, partition, &low, &high, requestTimeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            return .failure(KafkaError(code: err, context: "watermarks of \(topic) [\(partition)]"))
        }
        return .success((low, high))
    }
}
