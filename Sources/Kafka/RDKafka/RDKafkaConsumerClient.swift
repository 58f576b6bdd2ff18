import CRdKafka
import Dispatch
import Foundation
import Synchronization

/// A consumer handle and every call made on it, for `KafkaConsumer` (in a group, subscribed) and
/// `TopicReader` (group-less, partitions assigned directly). The handle never leaves this type.
///
/// Every call that can block runs as a job on the client's worker, in submission order. A poll that
/// waits for records polls in slices of at most 100 ms and gives way between slices to the jobs
/// queued behind it (a commit, a lag read), then resumes waiting; submitting a job also interrupts
/// a slice that waits for records (`rd_kafka_yield`). So pause, seek and resume take effect between
/// two polls, never during one, and a commit never waits out a whole poll timeout.
final class RDKafkaConsumerClient: Sendable {
    enum State { case open, closing, closed }

    nonisolated(unsafe) private let handle: OpaquePointer
    private let worker: ClientWorker
    private let state = Mutex(State.open)
    /// What calls after `close` throw.
    private let closedError: KafkaError
    /// Set while a poll waits for records, the only time a submitted job needs to interrupt it.
    private let pollBlocked = PollBlockedFlag()

    /// `topics` nil: a group-less reader, whose partitions are assigned with `assign`. `role` names
    /// the client in errors and its worker thread ("consumer", "topic reader").
    init(properties: [String: String], subscribing topics: [String]?, role: String) throws(KafkaError) {
        let handle = try RDKafkaConfig.makeHandle(type: RD_KAFKA_CONSUMER, properties: properties)
        // Client errors and logs arrive through the consumer queue that the polls serve.
        rd_kafka_poll_set_consumer(handle)
        if let topics {
            let list = RDKafkaTopicPartitionList(topics.map { (TopicPartition(topic: $0, partition: RD_KAFKA_PARTITION_UA), offset: Int64(RD_KAFKA_OFFSET_INVALID)) })
            let err = list.withPointer { rd_kafka_subscribe(handle, $0) }
            if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                rd_kafka_destroy(handle)
                throw KafkaError(code: err, context: "subscribe to \(topics.joined(separator: ","))")
            }
        }
        self.handle = handle
        closedError = KafkaError(kind: .closed, message: "\(role) is closed")
        nonisolated(unsafe) let rk = handle
        let blocked = pollBlocked
        // Only a poll that waits is interrupted: a yield reaching a poll that takes what is already
        // fetched (timeout 0) would end its batch early.
        worker = ClientWorker(name: "kafka-\(role.replacingOccurrences(of: " ", with: "-"))",
                              wake: { if blocked.isSet { rd_kafka_yield(rk) } })
    }

    deinit {
        worker.stop()
        if state.withLock({ $0 }) != .closed { _ = rd_kafka_consumer_close(handle) }
        rd_kafka_destroy(handle)
    }

    /// True until `close` begins.
    var isOpen: Bool { state.withLock { $0 == .open } }

    /// Stops new polls and flow-control calls at once (polls in progress return within a slice);
    /// commits already queued still run before `close`.
    func beginClose() {
        state.withLock { if $0 == .open { $0 = .closing } }
        rd_kafka_yield(handle)
    }

    /// Leaves the group (or drops the assignment) after the jobs queued before this one, then stops
    /// the worker. Safe to call more than once.
    func close() async {
        beginClose()
        await worker.run(whenStopped: ()) { [self] in
            let wasClosed = state.withLock { value in
                defer { value = .closed }
                return value == .closed
            }
            if !wasClosed { _ = rd_kafka_consumer_close(handle) }
        }
        worker.stop()
    }

    // MARK: Polling

    /// Up to `maxRecords` records: waits up to `timeoutMs` (nil: until one arrives) for the first, then
    /// takes only those already fetched. Empty once the client is closing or `stopped` turns true.
    /// Non-fatal consumer errors are logged (librdkafka retries them); a fatal one fails the poll, and
    /// the records taken so far are not handed out: uncommitted, they are redelivered.
    func poll(maxRecords: Int, timeoutMs: Int32?, stopped: @escaping @Sendable () -> Bool) async -> Result<[KafkaRecord], KafkaError> {
        let deadline = timeoutMs.map { DispatchTime.now().uptimeNanoseconds + UInt64($0) * 1_000_000 }
        return await withCheckedContinuation { continuation in
            let job = RecordPoll(maxRecords: maxRecords, deadline: deadline, stopped: stopped, continuation: continuation)
            if !worker.submit({ [self] in step(job) }) {
                continuation.resume(returning: .success([]))
            }
        }
    }

    /// Polls until the poll is answered, or gives way to queued jobs by queuing itself behind them.
    private func step(_ job: RecordPoll) {
        while true {
            guard isOpen, !job.stopped() else { return job.finish(.success(job.records)) }
            var slice: Int32 = 100
            if !job.records.isEmpty {
                slice = 0
            } else if let deadline = job.deadline {
                let now = DispatchTime.now().uptimeNanoseconds
                slice = now >= deadline ? 0 : Int32(min(100, (deadline - now + 999_999) / 1_000_000))
            }
            switch pollOnce(timeoutMs: slice) {
            case .record(let record)?:
                job.records.append(record)
                if job.records.count >= job.maxRecords { return job.finish(.success(job.records)) }
                continue
            case .failure(let error, fatal: true)?:
                return job.finish(.failure(error))
            case .failure(let error, fatal: false)?:
                librdkafkaLogger.warning("consumer error", metadata: ["error": .string(error.message)])
            case .partitionEnd?, nil:
                if !job.records.isEmpty { return job.finish(.success(job.records)) }
            }
            if let deadline = job.deadline, DispatchTime.now().uptimeNanoseconds >= deadline {
                return job.finish(.success(job.records))
            }
            if worker.hasWaitingJobs {
                if !worker.submit({ [self] in step(job) }) { job.finish(.success(job.records)) }
                return
            }
        }
    }

    /// Waits up to 100 ms for one event, then takes whatever else is already queued (up to 500),
    /// so one job serves a burst. `pausing` partitions are paused first. For `TopicReader`.
    func pollEvents(pausing: [TopicPartition]) async throws(KafkaError) -> [ConsumerEvent] {
        try await onWorker { [self] in
            if !pausing.isEmpty {
                _ = RDKafkaTopicPartitionList(pausing).withPointer { rd_kafka_pause_partitions(handle, $0) }
            }
            guard let first = pollOnce(timeoutMs: 100) else { return .success([]) }
            var events = [first]
            while events.count < 500, let more = pollOnce(timeoutMs: 0) { events.append(more) }
            return .success(events)
        }
    }

    /// Polls the consumer queue once, blocking up to `timeoutMs`; decodes the event so no librdkafka
    /// pointer outlives the call. Only from a job.
    private func pollOnce(timeoutMs: Int32) -> ConsumerEvent? {
        if timeoutMs > 0 { pollBlocked.set(true) }
        let polled = rd_kafka_consumer_poll(handle, timeoutMs)
        if timeoutMs > 0 { pollBlocked.set(false) }
        guard let message = polled else { return nil }
        defer { rd_kafka_message_destroy(message) }
        return ConsumerEvent(message)
    }

    // MARK: Offsets

    /// Commits the given next-offsets, synchronously with the group coordinator.
    func commit(_ offsets: [TopicPartition: Int64]) async throws(KafkaError) {
        try await onWorker(while: { $0 != .closed }) { [self] () -> Result<Void, KafkaError> in
            let list = RDKafkaTopicPartitionList(offsets.map { ($0.key, offset: $0.value) })
            let err = list.withPointer { rd_kafka_commit(handle, $0, 0) }
            return err == RD_KAFKA_RESP_ERR_NO_ERROR ? .success(()) : .failure(KafkaError(code: err, context: "commit"))
        }
    }

    /// The group's committed next-offset of a partition, or nil if it has none.
    func committedOffset(_ id: TopicPartition, timeoutMs: Int32) async throws(KafkaError) -> Int64? {
        try await onWorker(while: { $0 != .closed }) { [self] in
            let list = RDKafkaTopicPartitionList([id])
            let err = list.withPointer { rd_kafka_committed(handle, $0, timeoutMs) }
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { return .failure(KafkaError(code: err, context: "committed")) }
            let offset = list.elements.first?.offset ?? -1
            return .success(offset >= 0 ? offset : nil)
        }
    }

    // MARK: Flow control and assignment

    func pause(_ id: TopicPartition) async throws(KafkaError) {
        try await onWorker { [self] () -> Result<Void, KafkaError> in
            let list = RDKafkaTopicPartitionList([id])
            let err = list.withPointer { rd_kafka_pause_partitions(handle, $0) }
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { return .failure(KafkaError(code: err, context: "pause")) }
            return list.firstError(context: "pause").map { .failure($0) } ?? .success(())
        }
    }

    func resume(_ id: TopicPartition) async throws(KafkaError) {
        try await onWorker { [self] () -> Result<Void, KafkaError> in
            let list = RDKafkaTopicPartitionList([id])
            let err = list.withPointer { rd_kafka_resume_partitions(handle, $0) }
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { return .failure(KafkaError(code: err, context: "resume")) }
            return list.firstError(context: "resume").map { .failure($0) } ?? .success(())
        }
    }

    /// Moves a partition to `offset`, waiting up to `timeoutMs` for librdkafka to purge what it
    /// prefetched from the old position (`.timedOut` if it did not).
    func seek(_ id: TopicPartition, offset: Int64, timeoutMs: Int32) async throws(KafkaError) {
        try await onWorker { [self] () -> Result<Void, KafkaError> in
            let list = RDKafkaTopicPartitionList([(id, offset: offset)])
            // A timeout (not 0) makes the call wait for the purge; 0 would return before it.
            if let error = list.withPointer({ rd_kafka_seek_partitions(handle, $0, max(1, timeoutMs)) }) {
                return .failure(KafkaError(taking: error, context: "seek \(id)"))
            }
            return list.firstError(context: "seek").map { .failure($0) } ?? .success(())
        }
    }

    /// The partitions assigned now (empty before the first rebalance, once closing, or on error).
    func assignment() async -> [TopicPartition] {
        (try? await onWorker { [self] in .success(currentAssignment()) }) ?? []
    }

    /// Each assigned partition's position (the next offset to return, nil if unknown) and high
    /// watermark as of the last fetch (nil before one), from librdkafka's local state only.
    func positions() async -> [(id: TopicPartition, position: Int64?, highWatermark: Int64?)] {
        (try? await onWorker { [self] in
            let assigned = currentAssignment()
            guard !assigned.isEmpty else { return .success([]) }
            let list = RDKafkaTopicPartitionList(assigned)
            guard list.withPointer({ rd_kafka_position(handle, $0) }) == RD_KAFKA_RESP_ERR_NO_ERROR else { return .success([]) }
            return .success(list.elements.map { element in
                var low = Int64(RD_KAFKA_OFFSET_INVALID)
                var high = Int64(RD_KAFKA_OFFSET_INVALID)
                let err = rd_kafka_get_watermark_offsets(handle, element.id.topic, element.id.partition, &low, &high)
                let position = element.error == RD_KAFKA_RESP_ERR_NO_ERROR && element.offset >= 0 ? element.offset : nil
                return (element.id, position, err == RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0 ? high : nil)
            })
        }) ?? []
    }

    private func currentAssignment() -> [TopicPartition] {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(handle, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        return RDKafkaTopicPartitionList(taking: list).elements.map(\.id)
    }

    /// Assigns partitions directly, each from its offset (the reader: no group).
    func assign(_ offsets: [(TopicPartition, offset: Int64)]) async throws(KafkaError) {
        try await onWorker { [self] () -> Result<Void, KafkaError> in
            let err = RDKafkaTopicPartitionList(offsets).withPointer { rd_kafka_assign(handle, $0) }
            return err == RD_KAFKA_RESP_ERR_NO_ERROR ? .success(()) : .failure(KafkaError(code: err, context: "assign"))
        }
    }

    /// Resumes `partitions` (pauses could outlive the assignment) and drops the assignment.
    func unassign(resuming partitions: [TopicPartition]) async throws(KafkaError) {
        try await onWorker { [self] () -> Result<Void, KafkaError> in
            _ = RDKafkaTopicPartitionList(partitions).withPointer { rd_kafka_resume_partitions(handle, $0) }
            let err = rd_kafka_assign(handle, nil)
            return err == RD_KAFKA_RESP_ERR_NO_ERROR ? .success(()) : .failure(KafkaError(code: err, context: "unassign"))
        }
    }

    // MARK: Metadata

    /// The topic's partition ids, ascending, from cluster metadata. Fails if the topic is unknown.
    func partitions(of topic: String, timeoutMs: Int32) async throws(KafkaError) -> [Int32] {
        try await onWorker { [self] in
            guard let rkt = rd_kafka_topic_new(handle, topic, nil) else {
                return .failure(KafkaError(code: rd_kafka_last_error(), context: "topic \(topic)"))
            }
            defer { rd_kafka_topic_destroy(rkt) }
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(handle, 0, rkt, &metadata, timeoutMs)
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
    }

    /// The oldest offset still stored and the offset the next record will get, asked of the broker.
    func watermarks(_ id: TopicPartition, timeoutMs: Int32) async throws(KafkaError) -> (low: Int64, high: Int64) {
        try await onWorker { [self] in queryWatermarks(id, timeoutMs: timeoutMs) }
    }

    private func queryWatermarks(_ id: TopicPartition, timeoutMs: Int32) -> Result<(low: Int64, high: Int64), KafkaError> {
        var low: Int64 = 0
        var high: Int64 = 0
        let err = rd_kafka_query_watermark_offsets(handle, id.topic, id.partition, &low, &high, timeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { return .failure(KafkaError(code: err, context: "watermarks of \(id)")) }
        return .success((low, high))
    }

    /// The offset of the first record at or after `timestampMs`, or the high watermark when none is.
    func offset(forTimestampMs timestampMs: Int64, _ id: TopicPartition, timeoutMs: Int32) async throws(KafkaError) -> Int64 {
        try await onWorker { [self] in
            let list = RDKafkaTopicPartitionList([(id, offset: max(0, timestampMs))])
            let err = list.withPointer { rd_kafka_offsets_for_times(handle, $0, timeoutMs) }
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { return .failure(KafkaError(code: err, context: "offsets for times \(id.topic)")) }
            if let error = list.firstError(context: "offsets for times") { return .failure(error) }
            let offset = list.elements.first?.offset ?? Int64(RD_KAFKA_OFFSET_END)
            // Kafka answers "end" when no record is that recent.
            guard offset == Int64(RD_KAFKA_OFFSET_END) else { return .success(offset) }
            return queryWatermarks(id, timeoutMs: timeoutMs).map(\.high)
        }
    }

    /// Runs `body` on the worker if the client's state allows it (by default: open), else `.closed`.
    private func onWorker<T: Sendable>(while allowed: @escaping @Sendable (State) -> Bool = { $0 == .open },
                                       _ body: @escaping @Sendable () -> Result<T, KafkaError>) async throws(KafkaError) -> T {
        let closed = closedError
        let result = await worker.run(whenStopped: Result<T, KafkaError>.failure(closed)) { [self] in
            guard allowed(state.withLock { $0 }) else { return .failure(closed) }
            return body()
        }
        return try result.get()
    }
}

/// One waiting `poll`: what it gathered so far, carried from one slice of the worker to the next.
private final class RecordPoll: @unchecked Sendable {
    // Touched only by the worker's thread, one slice after the other.
    let maxRecords: Int
    let deadline: UInt64?
    let stopped: @Sendable () -> Bool
    var records: [KafkaRecord] = []
    private let continuation: CheckedContinuation<Result<[KafkaRecord], KafkaError>, Never>

    init(maxRecords: Int, deadline: UInt64?, stopped: @escaping @Sendable () -> Bool,
         continuation: CheckedContinuation<Result<[KafkaRecord], KafkaError>, Never>) {
        self.maxRecords = maxRecords
        self.deadline = deadline
        self.stopped = stopped
        self.continuation = continuation
    }

    func finish(_ result: Result<[KafkaRecord], KafkaError>) { continuation.resume(returning: result) }
}

/// Whether the consumer's worker is blocked in a poll that waits.
private final class PollBlockedFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set(_ blocked: Bool) { value.store(blocked, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
