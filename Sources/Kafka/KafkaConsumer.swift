import CRdKafka
import Dispatch
import Synchronization

/// A consumer in a consumer group. Offsets are committed only by `commit`, after the caller's
/// work is durable, so a crash redelivers rather than loses.
public final class KafkaConsumer: Sendable {
    let handle: RDKafkaHandle
    /// Blocking polls and commits run here, off the Swift pool and NIO's event loops. Pause, seek
    /// and resume run on `pollQueue` too, so they take effect between two polls, never during one.
    let pollQueue = DispatchQueue(label: "kafka-consumer-poll")
    private let commitQueue = DispatchQueue(label: "kafka-consumer-commit")
    /// Assignment and lag reads: short, but they wait on librdkafka's threads, so not on the pool,
    /// and not behind a long poll or commit either.
    let infoQueue = DispatchQueue(label: "kafka-consumer-info")
    private let state = Mutex(State.open)
    /// Where `seek` put each partition, until a record from it is returned: librdkafka 2.0.2's
    /// `rd_kafka_position` forgets the position on seek, and `lag()` should still count a held record.
    let seekPositions = Mutex<[PartitionKey: Int64]>([:])

    private enum State { case open, closing, closed }

    struct PartitionKey: Hashable, Sendable {
        var topic: String
        var partition: Int32
    }

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
        try await pollRecord(timeoutMs: nil)
    }

    /// The next record, or nil when none arrived within `timeoutMs`, so a loop can do timed work
    /// (such as resuming paused partitions) between records. Also nil once the consumer is closed
    /// or the task is cancelled: `isClosed` tells a closed consumer from a quiet one.
    public func poll(timeoutMs: Int32) async throws(KafkaError) -> KafkaRecord? {
        try await pollRecord(timeoutMs: max(0, timeoutMs))
    }

    /// True once `close` has begun: `poll` and `next` return nil from then on.
    public var isClosed: Bool { state.withLock { $0 != .open } }

    var isOpen: Bool { state.withLock { $0 == .open } }

    /// Up to `maxRecords` records: waits up to `timeoutMs` for the first, then takes the ones already
    /// fetched, all in one trip to the poll queue (a trip per record cost more than decoding it).
    /// Empty when none arrived in time, the consumer is closed or the task is cancelled.
    public func poll(upTo maxRecords: Int, timeoutMs: Int32) async throws(KafkaError) -> [KafkaRecord] {
        try await pollRecords(max: max(1, maxRecords), timeoutMs: max(0, timeoutMs))
    }

    private func pollRecord(timeoutMs: Int32?) async throws(KafkaError) -> KafkaRecord? {
        try await pollRecords(max: 1, timeoutMs: timeoutMs).first
    }

    /// Polls in slices of at most 100 ms so that close and cancellation are seen promptly;
    /// `timeoutMs` nil waits until a record arrives. After the first record, only what is already
    /// fetched (timeout 0).
    private func pollRecords(max maxRecords: Int, timeoutMs: Int32?) async throws(KafkaError) -> [KafkaRecord] {
        let cancelled = AtomicFlag()
        let result: Result<[KafkaRecord], KafkaError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                pollQueue.async { [self] in
                    let deadline = timeoutMs.map { DispatchTime.now().uptimeNanoseconds + UInt64($0) * 1_000_000 }
                    var records: [KafkaRecord] = []
                    while true {
                        guard isOpen, !cancelled.isSet else {
                            continuation.resume(returning: .success(records)); return
                        }
                        var slice: Int32 = 100
                        if !records.isEmpty {
                            slice = 0
                        } else if let deadline {
                            let now = DispatchTime.now().uptimeNanoseconds
                            slice = now >= deadline ? 0 : Int32(min(100, (deadline - now + 999_999) / 1_000_000))
                        }
                        switch pollConsumer(handle, timeoutMs: slice) {
                        case .record(let record)?:
                            seekPositions.withLock { positions in
                                if !positions.isEmpty { positions[PartitionKey(topic: record.topic, partition: record.partition)] = nil }
                            }
                            records.append(record)
                            if records.count >= maxRecords { continuation.resume(returning: .success(records)); return }
                            continue
                        case .failure(let error, fatal: true)?:
                            // The records taken so far are not handed out: uncommitted, they are redelivered.
                            continuation.resume(returning: .failure(error)); return
                        case .failure(let error, fatal: false)?:
                            librdkafkaLogger.warning("consumer error", metadata: ["error": .string(error.message)])
                        case .partitionEnd?, nil:
                            if !records.isEmpty { continuation.resume(returning: .success(records)); return }
                        }
                        if let deadline, DispatchTime.now().uptimeNanoseconds >= deadline {
                            continuation.resume(returning: .success(records)); return
                        }
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

