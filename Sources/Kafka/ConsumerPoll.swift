import CRdKafka

/// What one `rd_kafka_consumer_poll` produced, decoded so no librdkafka pointer outlives the call.
enum ConsumerEvent: Sendable {
    case record(KafkaRecord)
    /// The consumer reached the partition's end (only with `enable.partition.eof=true`).
    case partitionEnd(partition: Int32, offset: Int64)
    /// A consumer error; `fatal` ones end the client, the rest librdkafka retries itself.
    case failure(KafkaError, fatal: Bool)
}

/// Polls the consumer queue once, blocking up to `timeoutMs`. Call it only from a dedicated
/// queue or thread, never from the Swift concurrency pool.
func pollConsumer(_ handle: RDKafkaHandle, timeoutMs: Int32) -> ConsumerEvent? {
    guard let message = rd_kafka_consumer_poll(handle.pointer, timeoutMs) else { return nil }
    defer { rd_kafka_message_destroy(message) }
    let err = message.pointee.err
    switch err {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
        return .record(KafkaRecord(message))
    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
        return .partitionEnd(partition: message.pointee.partition, offset: message.pointee.offset)
    default:
        let topic = message.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) }
        let context = topic.map { "consume \($0) [\(message.pointee.partition)]" } ?? "consumer"
        return .failure(KafkaError(code: err, context: context), fatal: err == RD_KAFKA_RESP_ERR__FATAL)
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
