import Config
import Events
import Foundation
import Kafka

/// The development broker: librdkafka's mock cluster with every Tollgate topic created.
enum EmbeddedBroker {
    static func start(brokers: Int, topics: TopicNames, partitions: Int = 3) throws -> MockCluster {
        let cluster = try MockCluster(brokers: brokers)
        for topic in topics.all { try cluster.createTopic(topic.name, partitions: partitions) }
        return cluster
    }

    /// Writes `host:port,...` as one line, atomically, so a reader never sees half of it.
    static func writeBootstrap(_ servers: String, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data((servers + "\n").utf8).write(to: url, options: .atomic)
    }
}

extension KafkaSettings {
    func client(brokers: String) -> KafkaClientConfig {
        KafkaClientConfig(bootstrapServers: brokers, properties: properties)
    }
}
