import CRdKafka

extension TopicReader {
    /// Where one partition's read starts, and the end (exclusive) it stops at.
    struct PartitionRange: Sendable {
        var partition: Int32
        var start: Int64
        var end: Int64
    }

    /// Reads every partition of the topic from its start offset and hands each record to
    /// `handler`, one at a time, in offset order per partition; `handler` returns false to stop.
    ///
    /// - `start`: the first offset to read per partition. A missing partition, or an offset below
    ///   the low watermark (records deleted), starts at the low watermark; -1 (end) or an offset at
    ///   or past the high watermark reads nothing from that partition.
    /// - `untilHigh`: true stops at the high watermarks measured when the read begins, so it
    ///   terminates on an empty topic and ignores records written meanwhile; false keeps reading
    ///   new records until `handler` returns false or the task is cancelled.
    /// - `stallTimeoutMs`: with `untilHigh`, throws `.timedOut` when no record nor partition end
    ///   arrived for that long (brokers unreachable), instead of waiting forever.
    ///
    /// Nothing is committed; the partitions are unassigned again before this returns.
    public func read(
        from start: [Int32: Int64] = [:],
        untilHigh: Bool = true,
        stallTimeoutMs: Int32 = 30_000,
        handler: @Sendable (KafkaRecord) async throws -> Bool
    ) async throws {
        try beginRead()
        defer { reading.withLock { $0 = false } }
        let ranges = try await plan(start, untilHigh: untilHigh)
        if ranges.isEmpty { return }
        try await client.assign(ranges.map { (TopicPartition(topic: topic, partition: $0.partition), offset: $0.start) })
        let outcome: Result<Void, any Error>
        do {
            try await consume(ranges, untilHigh: untilHigh, stallTimeoutMs: stallTimeoutMs, handler: handler)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        // Unassign even after a failure, so the reader can read again; a closed reader has nothing left to undo.
        _ = try? await client.unassign(resuming: ranges.map { TopicPartition(topic: topic, partition: $0.partition) })
        try outcome.get()
    }

    private func beginRead() throws(KafkaError) {
        if client.isOpen == false { throw KafkaError(kind: .closed, message: "topic reader is closed") }
        let busy = reading.withLock { reading in
            defer { reading = true }
            return reading
        }
        if busy { throw KafkaError(kind: .configuration, message: "a read of \(topic) is already in progress on this reader") }
    }

    /// Measures the watermarks and decides each partition's range.
    private func plan(_ start: [Int32: Int64], untilHigh: Bool) async throws(KafkaError) -> [PartitionRange] {
        let partitions = try await partitions()
        if let unknown = start.keys.sorted().first(where: { !partitions.contains($0) }) {
            throw KafkaError(kind: .configuration, message: "\(topic) has no partition \(unknown)")
        }
        var ranges: [PartitionRange] = []
        for partition in partitions {
            let (low, high) = try await watermarks(partition: partition)
            let requested = start[partition] ?? low
            let first = requested == Int64(RD_KAFKA_OFFSET_END) ? high : min(max(requested, low), high)
            if untilHigh && first >= high { continue }
            ranges.append(PartitionRange(partition: partition, start: first, end: untilHigh ? high : .max))
        }
        return ranges
    }

    private func consume(
        _ ranges: [PartitionRange], untilHigh: Bool, stallTimeoutMs: Int32,
        handler: @Sendable (KafkaRecord) async throws -> Bool
    ) async throws {
        // Partition -> end offset (exclusive), for the partitions not finished yet.
        var open = Dictionary(uniqueKeysWithValues: ranges.map { ($0.partition, $0.end) })
        var finished: [Int32] = []
        var lastProgress = ContinuousClock.now
        while !untilHigh || !open.isEmpty {
            try Task.checkCancellation()
            let toPause = finished.map { TopicPartition(topic: topic, partition: $0) }
            finished = []
            let events = try await client.pollEvents(pausing: toPause)
            for event in events {
                switch event {
                case .record(let record):
                    guard let end = open[record.partition] else { continue }
                    // Records written after the read began belong to no one: stop that partition.
                    if record.offset >= end {
                        open[record.partition] = nil
                        finished.append(record.partition)
                        continue
                    }
                    if record.offset + 1 >= end {
                        open[record.partition] = nil
                        finished.append(record.partition)
                    }
                    guard try await handler(record) else { return }
                    lastProgress = .now
                case .partitionEnd(let partition, _):
                    // The fetcher caught up with the log's end, which is at or past `end`: done
                    // even if the last offsets before it held no record.
                    if untilHigh, open.removeValue(forKey: partition) != nil { finished.append(partition) }
                    lastProgress = .now
                case .failure(let error, let fatal):
                    if fatal || Self.endsRead(error) { throw error }
                    librdkafkaLogger.warning("topic reader error", metadata: ["error": .string(error.message)])
                }
            }
            if untilHigh, !open.isEmpty, ContinuousClock.now - lastProgress > .milliseconds(Int(stallTimeoutMs)) {
                throw KafkaError(kind: .timedOut, message: "reading \(topic): nothing arrived for \(stallTimeoutMs) ms from partitions \(open.keys.sorted())")
            }
        }
    }

    /// Errors that no retry inside librdkafka will clear.
    private static func endsRead(_ error: KafkaError) -> Bool {
        guard case .broker(let code, _) = error.kind else { return false }
        return [RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET].contains { $0.rawValue == code }
    }
}
