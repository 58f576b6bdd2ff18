import CRdKafka

/// The admin handle (a producer-type handle, as librdkafka's admin API wants) and every call made
/// on it, for `KafkaAdmin`. The handle never leaves this type; requests block, so they run as jobs
/// on the client's worker.
final class RDKafkaAdminClient: Sendable {
    nonisolated(unsafe) private let handle: OpaquePointer
    private let worker: ClientWorker

    init(properties: [String: String]) throws(KafkaError) {
        handle = try RDKafkaConfig.makeHandle(type: RD_KAFKA_PRODUCER, properties: properties)
        worker = ClientWorker(name: "kafka-admin")
    }

    deinit {
        worker.stop()
        rd_kafka_destroy(handle)
    }

    /// Creates the topics; per topic, whether it was created or already existed. Fails on the first
    /// topic that failed otherwise.
    func createTopics(_ topics: [TopicSpec], timeoutMs: Int32) async throws(KafkaError) -> [String: KafkaAdmin.Outcome] {
        try await onWorker { [self] in
            var errorText = [CChar](repeating: 0, count: 512)
            var newTopics: [OpaquePointer?] = []
            defer { for topic in newTopics { rd_kafka_NewTopic_destroy(topic) } }
            for spec in topics {
                guard let newTopic = rd_kafka_NewTopic_new(spec.name, Int32(spec.partitions), Int32(spec.replicationFactor), &errorText, errorText.count) else {
                    return .failure(KafkaError(kind: .configuration, message: "topic \(spec.name): \(cString(errorText))"))
                }
                newTopics.append(newTopic)
                for (key, value) in spec.config.sorted(by: { $0.key < $1.key }) {
                    _ = rd_kafka_NewTopic_set_config(newTopic, key, value)
                }
            }
            return request(RD_KAFKA_ADMIN_OP_CREATETOPICS, name: "CreateTopics", timeoutMs: timeoutMs) { options, queue in
                rd_kafka_CreateTopics(handle, &newTopics, newTopics.count, options, queue)
            } read: { event in
                var count = 0
                guard let result = rd_kafka_event_CreateTopics_result(event),
                      let results = rd_kafka_CreateTopics_result_topics(result, &count) else {
                    return .failure(KafkaError(kind: .configuration, message: "CreateTopics: no result"))
                }
                var outcomes: [String: KafkaAdmin.Outcome] = [:]
                for index in 0..<count {
                    guard let topicResult = results[index] else { continue }
                    let name = String(cString: rd_kafka_topic_result_name(topicResult))
                    let err = rd_kafka_topic_result_error(topicResult)
                    switch err {
                    case RD_KAFKA_RESP_ERR_NO_ERROR: outcomes[name] = .created
                    case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS: outcomes[name] = .alreadyExists
                    default:
                        let text = rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) } ?? ""
                        return .failure(KafkaError(kind: .broker(code: err.rawValue, name: String(cString: rd_kafka_err2name(err))),
                                                   message: "create topic \(name): \(text)"))
                    }
                }
                return .success(outcomes)
            }
        }
    }

    /// Deletes the records below each partition's offset; the new low watermark per partition.
    func deleteRecords(topic: String, beforeOffsets: [Int32: Int64], timeoutMs: Int32) async throws(KafkaError) -> [Int32: Int64] {
        try await onWorker { [self] in
            let offsets = RDKafkaTopicPartitionList(beforeOffsets.sorted { $0.key < $1.key }.map {
                (TopicPartition(topic: topic, partition: $0.key), offset: $0.value)
            })
            // librdkafka copies the list; it takes exactly one DeleteRecords object per call.
            var deletion: [OpaquePointer?] = [offsets.withPointer { rd_kafka_DeleteRecords_new($0) }]
            defer { rd_kafka_DeleteRecords_destroy_array(&deletion, deletion.count) }
            return request(RD_KAFKA_ADMIN_OP_DELETERECORDS, name: "DeleteRecords on \(topic)", timeoutMs: timeoutMs) { options, queue in
                rd_kafka_DeleteRecords(handle, &deletion, deletion.count, options, queue)
            } read: { event in
                guard let result = rd_kafka_event_DeleteRecords_result(event),
                      let partitions = rd_kafka_DeleteRecords_result_offsets(result) else {
                    return .failure(KafkaError(kind: .configuration, message: "DeleteRecords on \(topic): no result"))
                }
                if let error = RDKafkaTopicPartitionList.firstError(of: partitions, context: "delete records of") { return .failure(error) }
                var lowWatermarks: [Int32: Int64] = [:]
                for element in RDKafkaTopicPartitionList.elements(of: partitions) { lowWatermarks[element.id.partition] = element.offset }
                return .success(lowWatermarks)
            }
        }
    }

    /// One admin request: a result queue, request and operation timeouts, `submit`, then its result
    /// event, whose request-level error is answered here; `read` turns a good event into the result.
    private func request<T>(_ operation: rd_kafka_admin_op_t, name: String, timeoutMs: Int32,
                            submit: (OpaquePointer?, OpaquePointer) -> Void,
                            read: (OpaquePointer) -> Result<T, KafkaError>) -> Result<T, KafkaError> {
        var errorText = [CChar](repeating: 0, count: 512)
        guard let queue = rd_kafka_queue_new(handle) else {
            return .failure(KafkaError(kind: .configuration, message: "rd_kafka_queue_new failed"))
        }
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(handle, operation)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMs, &errorText, errorText.count)
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMs, &errorText, errorText.count)
        submit(options, queue)
        guard let event = rd_kafka_queue_poll(queue, timeoutMs + 5_000) else {
            return .failure(KafkaError(kind: .timedOut, message: "\(name) got no answer in \(timeoutMs) ms"))
        }
        defer { rd_kafka_event_destroy(event) }
        let eventError = rd_kafka_event_error(event)
        if eventError != RD_KAFKA_RESP_ERR_NO_ERROR {
            let text = String(cString: rd_kafka_event_error_string(event))
            return .failure(KafkaError(kind: .broker(code: eventError.rawValue, name: String(cString: rd_kafka_err2name(eventError))),
                                       message: "\(name): \(text)"))
        }
        return read(event)
    }

    private func onWorker<T: Sendable>(_ body: @escaping @Sendable () -> Result<T, KafkaError>) async throws(KafkaError) -> T {
        try await worker.run(whenStopped: .failure(KafkaError(kind: .closed, message: "admin client is closed")), body).get()
    }
}
