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

    private let client: RDKafkaAdminClient

    public init(client: KafkaClientConfig) throws(KafkaError) {
        self.client = try RDKafkaAdminClient(properties: client.baseProperties.merging(client.properties) { $1 })
    }

    /// Creates the topics; an existing topic is not an error. Throws on the first topic that failed.
    public func createTopics(_ topics: [TopicSpec], timeoutMs: Int32 = 30_000) async throws(KafkaError) -> [String: Outcome] {
        try await client.createTopics(topics, timeoutMs: timeoutMs)
    }

    /// Deletes every record below the given offset of each partition (`tollgate dlq purge`):
    /// the partition's low watermark moves up to that offset. Returns the new low watermark per
    /// partition. Throws the first partition's error, e.g. OFFSET_OUT_OF_RANGE past the high
    /// watermark; `isUnsupported` is true when the cluster does not serve DeleteRecords
    /// (librdkafka 2.0.2's mock cluster does not).
    @discardableResult
    public func deleteRecords(topic: String, beforeOffsets: [Int32: Int64], timeoutMs: Int32 = 30_000) async throws(KafkaError) -> [Int32: Int64] {
        if beforeOffsets.isEmpty { return [:] }
        return try await client.deleteRecords(topic: topic, beforeOffsets: beforeOffsets, timeoutMs: timeoutMs)
    }
}
