import CRdKafka
import Dispatch

/// How far a consumer is behind on one assigned partition, for `tollgate_consumer_lag{topic,partition}`.
public struct PartitionLag: Sendable, Equatable {
    public var topic: String
    public var partition: Int32
    /// The next offset this consumer will return: last returned + 1, or where a seek put it (so a
    /// record held back by pause + seek counts as lag). nil until this consumer has returned a
    /// record from the partition or seeked it.
    public var position: Int64?
    /// The partition's end as of the last fetch response; nil before the first one. It stops
    /// moving while the partition is paused (nothing is fetched).
    public var highWatermark: Int64?
    /// `highWatermark - position` (never negative), nil when either is unknown.
    public var lag: Int64?

    public init(topic: String, partition: Int32, position: Int64?, highWatermark: Int64?) {
        self.topic = topic
        self.partition = partition
        self.position = position
        self.highWatermark = highWatermark
        self.lag = position.flatMap { position in highWatermark.map { max(0, $0 - position) } }
    }
}

extension KafkaConsumer {
    /// Lag of every assigned partition, from librdkafka's local state only (rd_kafka_position and
    /// the cached watermarks): no broker round trip, so it is cheap enough for every scrape.
    public func lag() async -> [PartitionLag] {
        await withCheckedContinuation { continuation in
            infoQueue.async { [self] in
                continuation.resume(returning: currentLag())
            }
        }
    }

    private func currentLag() -> [PartitionLag] {
        let assigned = currentAssignment()
        guard !assigned.isEmpty else { return [] }
        let invalid = Int64(RD_KAFKA_OFFSET_INVALID)
        let positions = withPartitionList(assigned.map { ($0.topic, $0.partition, invalid) }) { list in
            let err = rd_kafka_position(handle.pointer, list)
            return err == RD_KAFKA_RESP_ERR_NO_ERROR ? .success(partitionElements(list)) : .failure(KafkaError(code: err, context: "position"))
        }
        guard case .success(let elements) = positions else { return [] }
        // Seeks on partitions no longer assigned are stale: a new assignment starts elsewhere.
        let assignedKeys = Set(assigned.map { PartitionKey(topic: $0.topic, partition: $0.partition) })
        let seeked = seekPositions.withLock { positions in
            positions = positions.filter { assignedKeys.contains($0.key) }
            return positions
        }
        return elements.map { element in
            var low = invalid
            var high = invalid
            let err = rd_kafka_get_watermark_offsets(handle.pointer, element.topic, element.partition, &low, &high)
            let known = element.err == RD_KAFKA_RESP_ERR_NO_ERROR && element.offset >= 0 ? element.offset : nil
            let position = seeked[PartitionKey(topic: element.topic, partition: element.partition)] ?? known
            let highWatermark = err == RD_KAFKA_RESP_ERR_NO_ERROR && high >= 0 ? high : nil
            return PartitionLag(topic: element.topic, partition: element.partition, position: position, highWatermark: highWatermark)
        }
    }
}
