import CRdKafka
import Dispatch

/// Flow control on assigned partitions, for consumers that hold a record back (the retry consumer
/// pauses a partition whose next record is not due yet, seeks back to it, resumes when it is due).
///
/// `pause`, `seek` and `resume` run on the poll queue, behind any poll in progress: call them
/// between polls, from the task that polls (during a `next()` that waits for a record they would
/// wait with it). Once one returns, the next poll sees its effect:
/// - `pause` stops fetching the partition and drops the records librdkafka had prefetched for it;
///   other partitions keep flowing.
/// - `seek` on a paused partition moves where fetching restarts and waits until librdkafka has
///   discarded what it fetched from the old position, so no stale record follows.
/// - `resume` fetches again from the seeked offset, or, without a seek, from the record after the
///   last one returned for that partition (nothing skipped, nothing repeated).
/// After a rebalance, assume nothing about pauses: check `assignment()` and pause again what must wait.
extension KafkaConsumer {
    public func pause(topic: String, partition: Int32) async throws(KafkaError) {
        try await onPollQueue { [handle] in
            withPartitionList([(topic, partition, Int64(RD_KAFKA_OFFSET_INVALID))]) { list in
                let err = rd_kafka_pause_partitions(handle.pointer, list)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR { return .failure(KafkaError(code: err, context: "pause")) }
                return firstPartitionError(list, context: "pause").map { .failure($0) } ?? .success(())
            }
        }
    }

    public func resume(topic: String, partition: Int32) async throws(KafkaError) {
        try await onPollQueue { [handle] in
            withPartitionList([(topic, partition, Int64(RD_KAFKA_OFFSET_INVALID))]) { list in
                let err = rd_kafka_resume_partitions(handle.pointer, list)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR { return .failure(KafkaError(code: err, context: "resume")) }
                return firstPartitionError(list, context: "resume").map { .failure($0) } ?? .success(())
            }
        }
    }

    /// Moves an assigned partition to `offset`, the next record to return for it. Waits up to
    /// `timeoutMs` for librdkafka to purge what it prefetched from the old position; throws
    /// `.timedOut` if it did not (the partition's position is then unknown: seek again).
    public func seek(topic: String, partition: Int32, offset: Int64, timeoutMs: Int32 = 10_000) async throws(KafkaError) {
        try await onPollQueue { [self] in
            withPartitionList([(topic, partition, offset)]) { list in
                // A timeout (not 0) makes the call wait for the purge; 0 would return before it.
                if let error = rd_kafka_seek_partitions(handle.pointer, list, max(1, timeoutMs)) {
                    let code = rd_kafka_error_code(error)
                    let text = String(cString: rd_kafka_error_string(error))
                    rd_kafka_error_destroy(error)
                    if code == RD_KAFKA_RESP_ERR__TIMED_OUT {
                        return .failure(KafkaError(kind: .timedOut, message: "seek \(topic) [\(partition)]: \(text)"))
                    }
                    return .failure(KafkaError(kind: .broker(code: code.rawValue, name: String(cString: rd_kafka_err2name(code))),
                                               message: "seek \(topic) [\(partition)]: \(text)"))
                }
                if let error = firstPartitionError(list, context: "seek") { return .failure(error) }
                seekPositions.withLock { $0[PartitionKey(topic: topic, partition: partition)] = offset }
                return .success(())
            }
        }
    }

    /// The partitions currently assigned to this member (empty before the first rebalance, after
    /// close, or on error).
    public func assignment() async -> [(topic: String, partition: Int32)] {
        await withCheckedContinuation { continuation in
            infoQueue.async { [self] in
                continuation.resume(returning: currentAssignment().map { ($0.topic, $0.partition) })
            }
        }
    }

    /// rd_kafka_assignment waits for the group thread's answer: call it off the pool.
    func currentAssignment() -> [(topic: String, partition: Int32, offset: Int64, err: rd_kafka_resp_err_t)] {
        guard isOpen else { return [] }
        var list: RDPartitionList?
        guard rd_kafka_assignment(handle.pointer, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return partitionElements(list)
    }

    /// Runs `body` on the poll queue (serialized with polls) and hands its result back.
    private func onPollQueue(_ body: @escaping @Sendable () -> Result<Void, KafkaError>) async throws(KafkaError) {
        let result: Result<Void, KafkaError> = await withCheckedContinuation { continuation in
            pollQueue.async { [self] in
                guard isOpen else {
                    continuation.resume(returning: .failure(KafkaError(kind: .closed, message: "consumer is closed")))
                    return
                }
                continuation.resume(returning: body())
            }
        }
        try result.get()
    }
}
