import CRdKafka

/// librdkafka's in-process mock cluster: a real Kafka-protocol broker on loopback ports that any
/// client (ours, `kcat`) can use. For development and tests only: it keeps everything in memory.
public final class MockCluster: Sendable {
    /// The mock cluster lives inside a client handle of its own.
    private let host: RDKafkaHandle
    nonisolated(unsafe) private let cluster: OpaquePointer
    public let brokerCount: Int
    public let bootstrapServers: String

    public init(brokers: Int = 1) throws(KafkaError) {
        // log_level 4 keeps the host handle's "no bootstrap.servers" notice out of the logs.
        host = try RDKafkaHandle(type: RD_KAFKA_PRODUCER, properties: ["log_level": "4", "client.id": "tollgate-mock-cluster"])
        guard let cluster = rd_kafka_mock_cluster_new(host.pointer, Int32(brokers)) else {
            throw KafkaError(kind: .configuration, message: "could not start the mock cluster")
        }
        self.cluster = cluster
        self.brokerCount = brokers
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
    }

    /// The cluster must go before its host handle, which the stored property then releases.
    deinit {
        rd_kafka_mock_cluster_destroy(cluster)
    }

    /// Creates a topic directly in the mock (its controller does not serve the admin API).
    public func createTopic(_ name: String, partitions: Int = 3, replicationFactor: Int? = nil) throws(KafkaError) {
        let err = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(replicationFactor ?? brokerCount))
        if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
            throw KafkaError(code: err, context: "create mock topic \(name)")
        }
    }

    /// Broker ids run from 1 to `brokerCount`.
    public func setBroker(_ id: Int, up: Bool) {
        if up { _ = rd_kafka_mock_broker_set_up(cluster, Int32(id)) }
        else { _ = rd_kafka_mock_broker_set_down(cluster, Int32(id)) }
    }

    public func setAllBrokers(up: Bool) {
        for id in 1...brokerCount { setBroker(id, up: up) }
    }
}
