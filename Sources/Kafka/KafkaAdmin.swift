import CRdKafka
import Dispatch

/// A topic to create.
public struct TopicSpec: Sendable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    /// Topic configuration, e.g. `cleanup.policy: compact`, `retention.ms`.
    public var config: [String: String]

    public init(name: String, partitions: Int, replicationFactor: Int, config: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.config = config
    }
}

/// Cluster administration through librdkafka's admin API.
public final class KafkaAdmin: Sendable {
    public enum Outcome: Sendable, Equatable { case created, alreadyExists }

    let handle: RDKafkaHandle

    public init(client: KafkaClientConfig) throws(KafkaError) {
        handle = try RDKafkaHandle(type: RD_KAFKA_PRODUCER, properties: client.baseProperties.merging(client.properties) { $1 })
    }

    /// Creates the topics; an existing topic is not an error. Throws on the first topic that failed.
    public func createTopics(_ topics: [TopicSpec], timeoutMs: Int32 = 30_000) async throws(KafkaError) -> [String: Outcome] {
        let result: Result<[String: Outcome], KafkaError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [handle] in
                continuation.resume(returning: Self.createTopicsBlocking(handle.pointer, topics, timeoutMs: timeoutMs))
            }
        }
        return try result.get()
    }

    private static func createTopicsBlocking(_ rk: OpaquePointer, _ topics: [TopicSpec], timeoutMs: Int32) -> Result<[String: Outcome], KafkaError> {
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
        return adminRequest(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, name: "CreateTopics", timeoutMs: timeoutMs) { options, queue in
            rd_kafka_CreateTopics(rk, &newTopics, newTopics.count, options, queue)
        } read: { event in
            var count = 0
            guard let result = rd_kafka_event_CreateTopics_result(event),
                  let results = rd_kafka_CreateTopics_result_topics(result, &count) else {
                return .failure(KafkaError(kind: .configuration, message: "CreateTopics: no result"))
            }
            var outcomes: [String: Outcome] = [:]
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

    /// One admin request: a result queue, request and operation timeouts, `submit`, then its result
    /// event, whose request-level error is answered here; `read` turns a good event into the result.
    static func adminRequest<T>(_ rk: OpaquePointer, _ operation: rd_kafka_admin_op_t, name: String, timeoutMs: Int32,
                                submit: (OpaquePointer?, OpaquePointer) -> Void,
                                read: (OpaquePointer) -> Result<T, KafkaError>) -> Result<T, KafkaError> {
        var errorText = [CChar](repeating: 0, count: 512)
        guard let queue = rd_kafka_queue_new(rk) else {
            return .failure(KafkaError(kind: .configuration, message: "rd_kafka_queue_new failed"))
        }
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(rk, operation)
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

}
