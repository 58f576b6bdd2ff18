import CRdKafka

typealias RDPartitionList = UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

/// Runs `body` with a librdkafka partition list holding `entries` (offset per entry, or
/// `RD_KAFKA_OFFSET_INVALID` when the call ignores it), and frees the list afterwards.
func withPartitionList<R>(
    _ entries: [(topic: String, partition: Int32, offset: Int64)],
    _ body: (RDPartitionList) -> Result<R, KafkaError>
) -> Result<R, KafkaError> {
    guard let list = rd_kafka_topic_partition_list_new(Int32(entries.count)) else {
        return .failure(KafkaError(kind: .configuration, message: "rd_kafka_topic_partition_list_new failed"))
    }
    defer { rd_kafka_topic_partition_list_destroy(list) }
    for entry in entries {
        rd_kafka_topic_partition_list_add(list, entry.topic, entry.partition).pointee.offset = entry.offset
    }
    return body(list)
}

/// The list's elements as Swift values (librdkafka fills offsets and per-partition errors in place).
func partitionElements(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [(topic: String, partition: Int32, offset: Int64, err: rd_kafka_resp_err_t)] {
    guard let elements = list.pointee.elems else { return [] }
    return (0..<Int(list.pointee.cnt)).map { index in
        let element = elements[index]
        return (String(cString: element.topic), element.partition, element.offset, element.err)
    }
}

/// The first per-partition error librdkafka reported in the list, if any.
func firstPartitionError(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>, context: String) -> KafkaError? {
    partitionElements(list).first { $0.err != RD_KAFKA_RESP_ERR_NO_ERROR }.map {
        KafkaError(code: $0.err, context: "\(context) \($0.topic) [\($0.partition)]")
    }
}
