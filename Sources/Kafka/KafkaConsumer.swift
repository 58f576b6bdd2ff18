import CRdKafka
import Dispatch
import Synchronization

/// A consumer in a consumer group. Offsets are committed only by `commit`, after the caller's
/// work is durable, so a crash redelivers rather than loses.
public final class KafkaConsumer: Sendable {
    private let handle: RDKafkaHandle
    /// Blocking polls and commits run here, off the Swift pool and NIO's event loops.
    private let pollQueue = DispatchQueue(label: "kafka-consumer-poll")
    private let commitQueue = DispatchQueue(label: "kafka-consumer-commit")
    private let state = Mutex(State.open)

    private enum State { case open, closing, closed }

    public init(config: ConsumerConfig, topics: [String]) throws(KafkaError) {
        handle = try RDKafkaHandle(type: RD_KAFKA_CONSUMER, properties: config.properties)
        rd_kafka_poll_set_consumer(handle.pointer)
        guard let list = rd_kafka_topic_partition_list_new(Int32(topics.count)) else {
            throw KafkaError(kind: .configuration, message: "rd_kafka_topic_partition_list_new failed")
        }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for topic in topics { rd_kafka_topic_partition_list_add(list, topic, RD_KAFKA_PARTITION_UA) }
        let err = rd_kafka_subscribe(handle.pointer, list)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            // deinit still runs (every property is set) and closes; the handle frees itself.
            throw KafkaError(code: err, context: "subscribe to \(topics.joined(separator: ","))")
        }
    }

    deinit { shutDown() }

    /// The next record, or nil once the consumer is closed or the task is cancelled.
    /// Transient broker errors are retried by librdkafka and do not end the stream.
    public func next() async throws(KafkaError) -> KafkaRecord? {
        let cancelled = AtomicFlag()
        let result: Result<KafkaRecord?, KafkaError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                pollQueue.async { [self] in
                    while true {
                        guard state.withLock({ $0 == .open }), !cancelled.isSet else {
                            continuation.resume(returning: .success(nil)); return
                        }
                        guard let message = rd_kafka_consumer_poll(handle.pointer, 100) else { continue }
                        defer { rd_kafka_message_destroy(message) }
                        let err = message.pointee.err
                        if err == RD_KAFKA_RESP_ERR_NO_ERROR {
                            continuation.resume(returning: .success(KafkaRecord(message))); return
                        }
                        if err == RD_KAFKA_RESP_ERR__FATAL {
                            continuation.resume(returning: .failure(KafkaError(code: err, context: "consumer"))); return
                        }
                        librdkafkaLogger.warning("consumer error", metadata: [
                            "error": .string(String(cString: rd_kafka_err2str(err)))])
                    }
                }
            }
        } onCancel: {
            cancelled.set()
        }
        return try result.get()
    }

    /// Commits `record.offset + 1` for its partition and waits for the broker's answer.
    public func commit(_ record: KafkaRecord) async throws(KafkaError) {
        try await commit([(record.topic, record.partition, record.offset + 1)])
    }

    /// Commits the given next-offsets to consume, synchronously with the group coordinator.
    public func commit(_ offsets: [(topic: String, partition: Int32, nextOffset: Int64)]) async throws(KafkaError) {
        let result: Result<Void, KafkaError> = await withCheckedContinuation { continuation in
            commitQueue.async { [self] in
                guard state.withLock({ $0 != .closed }) else {
                    continuation.resume(returning: .failure(KafkaError(kind: .closed, message: "consumer is closed")))
                    return
                }
                guard let list = rd_kafka_topic_partition_list_new(Int32(offsets.count)) else {
                    continuation.resume(returning: .failure(KafkaError(kind: .configuration, message: "partition list")))
                    return
                }
                defer { rd_kafka_topic_partition_list_destroy(list) }
                for entry in offsets {
                    rd_kafka_topic_partition_list_add(list, entry.topic, entry.partition).pointee.offset = entry.nextOffset
                }
                let err = rd_kafka_commit(handle.pointer, list, 0)
                continuation.resume(returning: err == RD_KAFKA_RESP_ERR_NO_ERROR
                    ? .success(()) : .failure(KafkaError(code: err, context: "commit")))
            }
        }
        try result.get()
    }

    /// The committed next-offset of a partition, or nil if the group has none.
    public func committedOffset(topic: String, partition: Int32, timeoutMs: Int32 = 5_000) async throws(KafkaError) -> Int64? {
        let result: Result<Int64?, KafkaError> = await withCheckedContinuation { continuation in
            commitQueue.async { [self] in
                guard state.withLock({ $0 != .closed }), let list = rd_kafka_topic_partition_list_new(1) else {
                    continuation.resume(returning: .failure(KafkaError(kind: .closed, message: "consumer is closed")))
                    return
                }
                defer { rd_kafka_topic_partition_list_destroy(list) }
                rd_kafka_topic_partition_list_add(list, topic, partition)
                let err = rd_kafka_committed(handle.pointer, list, timeoutMs)
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    continuation.resume(returning: .failure(KafkaError(code: err, context: "committed")))
                    return
                }
                let offset = list.pointee.elems[0].offset
                continuation.resume(returning: .success(offset >= 0 ? offset : nil))
            }
        }
        return try result.get()
    }

    /// Leaves the group cleanly (so partitions move at once). Commits already queued finish first.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Behind any running poll, which sees the state change within 100 ms.
            state.withLock { if $0 == .open { $0 = .closing } }
            pollQueue.async { [self] in
                commitQueue.sync { shutDown() }
                continuation.resume()
            }
        }
    }

    private func shutDown() {
        let shouldClose = state.withLock { value in
            defer { value = .closed }
            return value != .closed
        }
        guard shouldClose else { return }
        _ = rd_kafka_consumer_close(handle.pointer)
    }
}


extension KafkaRecord {
    init(_ message: UnsafeMutablePointer<rd_kafka_message_t>) {
        let m = message.pointee
        topic = m.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        partition = m.partition
        offset = m.offset
        key = m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) }
        value = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) } ?? []
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let ts = rd_kafka_message_timestamp(message, &timestampType)
        timestampMs = timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : ts
        var decoded: [KafkaHeader] = []
        var headers: OpaquePointer?
        if rd_kafka_message_headers(message, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR, let headers {
            var index = 0
            var name: UnsafePointer<CChar>?
            var value: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(headers, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                decoded.append(KafkaHeader(
                    name: name.map { String(cString: $0) } ?? "",
                    value: value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }))
                index += 1
            }
        }
        self.headers = decoded
    }
}
