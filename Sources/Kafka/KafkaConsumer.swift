import CRdKafka
import Synchronization

/// A consumer in a consumer group. Offsets are committed only by `commit`, after the caller's
/// work is durable, so a crash redelivers rather than loses.
///
/// Records come as an `AsyncSequence` of batches (`batches(maxRecords:idleTimeoutMs:)`), or one
/// poll at a time (`poll`, `next`). Nothing is fetched ahead of the caller's request beyond what
/// librdkafka prefetches itself, so `pause`, `seek` and `resume` between two requests take effect
/// on the next one.
public final class KafkaConsumer: Sendable {
    private let client: RDKafkaConsumerClient
    /// Where `seek` put each partition, until a record from it is returned: librdkafka 2.0.2's
    /// `rd_kafka_position` forgets the position on seek, and `lag()` should still count a held record.
    private let seekPositions = Mutex<[TopicPartition: Int64]>([:])

    /// Told of the group's commits (`tollgate dev`'s embedded broker).
    private let logGuard: MockLogGuard?
    private let groupId: String

    public init(config: ConsumerConfig, topics: [String]) throws(KafkaError) {
        client = try RDKafkaConsumerClient(properties: config.properties, subscribing: topics, role: "consumer")
        logGuard = config.client.mockLogGuard
        groupId = config.groupId
        logGuard?.watch(group: groupId, topics: topics)
    }

    /// The next record, or nil once the consumer is closed or the task is cancelled.
    /// Transient broker errors are retried by librdkafka and do not end the stream.
    public func next() async throws(KafkaError) -> KafkaRecord? {
        try await pollRecords(max: 1, timeoutMs: nil).first
    }

    /// The next record, or nil when none arrived within `timeoutMs`, so a loop can do timed work
    /// (such as resuming paused partitions) between records. Also nil once the consumer is closed
    /// or the task is cancelled: `isClosed` tells a closed consumer from a quiet one.
    public func poll(timeoutMs: Int32) async throws(KafkaError) -> KafkaRecord? {
        try await pollRecords(max: 1, timeoutMs: max(0, timeoutMs)).first
    }

    /// The records as batches of up to `maxRecords`; see `KafkaRecordBatches`.
    public func batches(maxRecords: Int, idleTimeoutMs: Int32? = nil) -> KafkaRecordBatches {
        KafkaRecordBatches(consumer: self, maxRecords: Swift.max(1, maxRecords), idleTimeoutMs: idleTimeoutMs.map { Swift.max(0, $0) })
    }

    /// True once `close` has begun: polls return nothing from then on.
    public var isClosed: Bool { !client.isOpen }

    /// Up to `maxRecords` records: waits up to `timeoutMs` (nil: until one arrives) for the first, then
    /// takes the ones already fetched, all in one job on the client's worker (a job per record cost
    /// more than decoding it). Empty when none arrived in time, the consumer is closed or the task is cancelled.
    func pollRecords(max maxRecords: Int, timeoutMs: Int32?) async throws(KafkaError) -> [KafkaRecord] {
        let cancelled = Atomic<Bool>(false)
        let result = await withTaskCancellationHandler {
            await client.poll(maxRecords: maxRecords, timeoutMs: timeoutMs) { cancelled.load(ordering: .acquiring) }
        } onCancel: {
            cancelled.store(true, ordering: .releasing)
        }
        let records = try result.get()
        if !records.isEmpty {
            seekPositions.withLock { positions in
                guard !positions.isEmpty else { return }
                for record in records { positions[TopicPartition(topic: record.topic, partition: record.partition)] = nil }
            }
        }
        return records
    }

    /// Commits `record.offset + 1` for its partition and waits for the broker's answer.
    public func commit(_ record: KafkaRecord) async throws(KafkaError) {
        try await commit([TopicPartition(topic: record.topic, partition: record.partition): record.offset + 1])
    }

    /// Commits the given next-offsets to consume, synchronously with the group coordinator.
    /// Commits queued before `close` still run.
    public func commit(_ nextOffsets: [TopicPartition: Int64]) async throws(KafkaError) {
        try await client.commit(nextOffsets)
        logGuard?.committed(group: groupId, nextOffsets)
    }

    /// The committed next-offset of a partition, or nil if the group has none.
    public func committedOffset(topic: String, partition: Int32, timeoutMs: Int32 = 5_000) async throws(KafkaError) -> Int64? {
        try await client.committedOffset(TopicPartition(topic: topic, partition: partition), timeoutMs: timeoutMs)
    }

    /// Leaves the group cleanly (so partitions move at once). Commits already queued finish first.
    public func close() async {
        await client.close()
    }

    // MARK: Flow control

    // For consumers that hold a record back (the retry consumer pauses a partition whose next record
    // is not due yet, seeks back to it, resumes when it is due). Call them between polls, from the
    // task that polls; once one returns, the next poll sees its effect:
    // - `pause` stops fetching the partition and drops the records librdkafka had prefetched for it;
    //   other partitions keep flowing.
    // - `seek` on a paused partition moves where fetching restarts and waits until librdkafka has
    //   discarded what it fetched from the old position, so no stale record follows.
    // - `resume` fetches again from the seeked offset, or, without a seek, from the record after the
    //   last one returned for that partition (nothing skipped, nothing repeated).
    // After a rebalance, assume nothing about pauses: check `assignment()` and pause again what must wait.

    public func pause(topic: String, partition: Int32) async throws(KafkaError) {
        try await client.pause(TopicPartition(topic: topic, partition: partition))
    }

    public func resume(topic: String, partition: Int32) async throws(KafkaError) {
        try await client.resume(TopicPartition(topic: topic, partition: partition))
    }

    /// Moves an assigned partition to `offset`, the next record to return for it. Waits up to
    /// `timeoutMs` for librdkafka to purge what it prefetched from the old position; throws
    /// `.timedOut` if it did not (the partition's position is then unknown: seek again).
    public func seek(topic: String, partition: Int32, offset: Int64, timeoutMs: Int32 = 10_000) async throws(KafkaError) {
        let id = TopicPartition(topic: topic, partition: partition)
        try await client.seek(id, offset: offset, timeoutMs: timeoutMs)
        seekPositions.withLock { $0[id] = offset }
    }

    /// The partitions currently assigned to this member (empty before the first rebalance, after
    /// close, or on error).
    public func assignment() async -> [TopicPartition] {
        await client.assignment()
    }

    /// Lag of every assigned partition, from librdkafka's local state only (rd_kafka_position and
    /// the cached watermarks): no broker round trip, so it is cheap enough for every scrape.
    public func lag() async -> [PartitionLag] {
        let positions = await client.positions()
        // Seeks on partitions no longer assigned are stale: a new assignment starts elsewhere.
        let assigned = Set(positions.map(\.id))
        let seeked = seekPositions.withLock { seeked in
            seeked = seeked.filter { assigned.contains($0.key) }
            return seeked
        }
        return positions.map { entry in
            PartitionLag(topic: entry.id.topic, partition: entry.id.partition,
                         position: seeked[entry.id] ?? entry.position, highWatermark: entry.highWatermark)
        }
    }
}

/// A consumer's records as an `AsyncSequence` of batches: each element is up to `maxRecords` records
/// in offset order per partition, taken in one job on the consumer's worker. The sequence ends
/// (nil) once the consumer closes or the task is cancelled; a fatal consumer error is thrown.
///
/// With `idleTimeoutMs`, an empty batch comes when nothing arrived for that long, so a loop can do
/// timed work (report lag, resume partitions); without it, `next()` waits for a record.
/// `next(waitingAtMostMs:)` overrides the wait once (the retry consumer wakes when a paused
/// partition is due). The iterator is a value: it can be handed to a child task to poll the next
/// batch while the caller applies the current one.
public struct KafkaRecordBatches: AsyncSequence, Sendable {
    public typealias Element = [KafkaRecord]

    let consumer: KafkaConsumer
    let maxRecords: Int
    let idleTimeoutMs: Int32?

    public func makeAsyncIterator() -> Iterator {
        Iterator(consumer: consumer, maxRecords: maxRecords, idleTimeoutMs: idleTimeoutMs)
    }

    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let consumer: KafkaConsumer
        let maxRecords: Int
        let idleTimeoutMs: Int32?

        public mutating func next() async throws(KafkaError) -> [KafkaRecord]? {
            try await next(waitingAtMostMs: idleTimeoutMs)
        }

        /// The next batch, waiting at most `timeoutMs` (nil: until a record arrives) for its first record.
        public mutating func next(waitingAtMostMs timeoutMs: Int32?) async throws(KafkaError) -> [KafkaRecord]? {
            let records = try await consumer.pollRecords(max: maxRecords, timeoutMs: timeoutMs.map { Swift.max(0, $0) })
            if records.isEmpty, consumer.isClosed || Task.isCancelled { return nil }
            return records
        }
    }
}
