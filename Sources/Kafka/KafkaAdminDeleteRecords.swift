import CRdKafka
import Dispatch

extension KafkaAdmin {
    /// Deletes every record below the given offset of each partition (`tollgate dlq purge`):
    /// the partition's low watermark moves up to that offset. Returns the new low watermark per
    /// partition. Throws the first partition's error, e.g. OFFSET_OUT_OF_RANGE past the high
    /// watermark; `isUnsupported` is true when the cluster does not serve DeleteRecords
    /// (librdkafka 2.0.2's mock cluster does not).
    @discardableResult
    public func deleteRecords(topic: String, beforeOffsets: [Int32: Int64], timeoutMs: Int32 = 30_000) async throws(KafkaError) -> [Int32: Int64] {
        if beforeOffsets.isEmpty { return [:] }
        let result: Result<[Int32: Int64], KafkaError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [handle] in
                let entries = beforeOffsets.sorted { $0.key < $1.key }.map { (topic, $0.key, $0.value) }
                continuation.resume(returning: withPartitionList(entries) { list in
                    Self.deleteRecordsBlocking(handle.pointer, list, topic: topic, timeoutMs: timeoutMs)
                })
            }
        }
        return try result.get()
    }

    private static func deleteRecordsBlocking(_ rk: OpaquePointer, _ offsets: RDPartitionList, topic: String, timeoutMs: Int32) -> Result<[Int32: Int64], KafkaError> {
        // librdkafka copies the list; it takes exactly one DeleteRecords object per call.
        var request: [OpaquePointer?] = [rd_kafka_DeleteRecords_new(offsets)]
        defer { rd_kafka_DeleteRecords_destroy_array(&request, request.count) }
        return KafkaAdmin.adminRequest(rk, RD_KAFKA_ADMIN_OP_DELETERECORDS, name: "DeleteRecords on \(topic)", timeoutMs: timeoutMs) { options, queue in
            rd_kafka_DeleteRecords(rk, &request, request.count, options, queue)
        } read: { event in
            readDeleteRecords(event, topic: topic)
        }
    }

    private static func readDeleteRecords(_ event: OpaquePointer, topic: String) -> Result<[Int32: Int64], KafkaError> {
        guard let result = rd_kafka_event_DeleteRecords_result(event),
              let partitions = rd_kafka_DeleteRecords_result_offsets(result) else {
            return .failure(KafkaError(kind: .configuration, message: "DeleteRecords on \(topic): no result"))
        }
        if let error = firstPartitionError(partitions, context: "delete records of") { return .failure(error) }
        var lowWatermarks: [Int32: Int64] = [:]
        for element in partitionElements(partitions) { lowWatermarks[element.partition] = element.offset }
        return .success(lowWatermarks)
    }
}
