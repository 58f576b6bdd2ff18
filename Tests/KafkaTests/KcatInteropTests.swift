import Foundation
import Kafka
import TestSupport
import Testing

@Suite("Independent clients")
struct KcatInteropTests {
    @Test("kcat reads back what Tollgate's producer wrote, headers included")
    func kcatReadsRecord() async throws {
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("t.kcat", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers)))
        defer { producer.close() }
        try await producer.send(KafkaMessage(topic: "t.kcat", key: "sub-1", value: Array(#"{"a":1}"#.utf8),
                                             headers: [KafkaHeader(name: "ce_type", string: "dev.tollgate.store.test")]))

        let output = try await Subprocess.run("/usr/bin/kcat", ["-b", cluster.bootstrapServers, "-C", "-t", "t.kcat", "-o", "beginning",
                                               "-c", "1", "-e", "-q", "-f", "%k|%h|%s\n"]).output
        #expect(output == #"sub-1|ce_type=dev.tollgate.store.test|{"a":1}"# + "\n")
    }
}
