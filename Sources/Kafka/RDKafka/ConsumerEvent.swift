import CRdKafka

/// What one `rd_kafka_consumer_poll` produced, decoded so no librdkafka pointer outlives the call.
enum ConsumerEvent: Sendable {
    case record(KafkaRecord)
    /// The consumer reached the partition's end (only with `enable.partition.eof=true`).
    case partitionEnd(partition: Int32, offset: Int64)
    /// A consumer error; `fatal` ones end the client, the rest librdkafka retries itself.
    case failure(KafkaError, fatal: Bool)
}

extension ConsumerEvent {
    /// Decodes one message of `rd_kafka_consumer_poll`; the caller destroys the message.
    init(_ message: UnsafeMutablePointer<rd_kafka_message_t>) {
        let err = message.pointee.err
        switch err {
        case RD_KAFKA_RESP_ERR_NO_ERROR:
            self = .record(KafkaRecord(message))
        case RD_KAFKA_RESP_ERR__PARTITION_EOF:
            self = .partitionEnd(partition: message.pointee.partition, offset: message.pointee.offset)
        default:
            let topic = message.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) }
            let context = topic.map { "consume \($0) [\(message.pointee.partition)]" } ?? "consumer"
            self = .failure(KafkaError(code: err, context: context), fatal: err == RD_KAFKA_RESP_ERR__FATAL)
        }
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
