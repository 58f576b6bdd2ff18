import Events
import Foundation
import Kafka
import TestSupport
import Testing
import Toolkit

/// `tollgate dlq` and `tollgate replay` say when the range asked for reaches back past the oldest record
/// the broker still keeps, instead of answering with less without a word: here the embedded broker's
/// in-memory limit (librdkafka's mock keeps about 5 MiB a partition) has dropped a partition's first records.
@Suite("Operator tools say what the broker no longer keeps")
struct TopicGapTests {
    @Test("past the embedded broker's limit: dlq list and replay name the partition and its oldest kept offset; asked from after it, they say nothing")
    func droppedRecordsAreNamed() async throws {
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("tollgate.events-dlt", partitions: 1)
        try cluster.createTopic("tollgate.raw.iaptic", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers)))
        defer { producer.close() }
        // 8 MiB into each partition, 8 KiB a record: more than the mock keeps.
        let value = Array(repeating: UInt8(ascii: "x"), count: 8_192)
        for index in 0..<1_024 {
            for topic in ["tollgate.events-dlt", "tollgate.raw.iaptic"] {
                try await producer.send(KafkaMessage(topic: topic, key: "k-\(index)", value: value, partition: 0))
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-gaps-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data("sources: { iaptic: { apps: [{ name: app, secrets: [gap-test-secret-0123] }] } }\n".utf8).write(to: URL(fileURLWithPath: configPath))
        let common = ["--config", configPath, "--brokers", cluster.bootstrapServers]

        let list = try await CLI.run(["dlq", "list", "--limit", "1"] + common, directory: directory)
        #expect(list.status == 0, "\(list.stderr)")
        let said = try #require(list.stderr.split(separator: "\n").first { $0.hasPrefix("tollgate: tollgate.events-dlt partition 0 keeps offsets from ") },
                                "\(list.stderr)")
        let low = Int(said.dropFirst("tollgate: tollgate.events-dlt partition 0 keeps offsets from ".count).prefix { $0.isNumber }) ?? 0
        #expect(low > 0 && low < 1_024, "\(said)")
        #expect(said.contains("offsets 0-\(low - 1) are gone"), "\(said)")
        #expect(list.stderr.contains("\(1_024 - low - 1) more; raise --limit to see them"), "\(list.stderr)")

        let replay = try await CLI.run(["replay", "--from", "raw.iaptic", "--dry-run", "--since", "1h"] + common, directory: directory)
        #expect(replay.stderr.contains("tollgate: tollgate.raw.iaptic partition 0 keeps offsets from "), "\(replay.stderr)")

        // Asked from a time after the oldest kept record: nothing asked for is gone, nothing is said.
        let recent = try await CLI.run(["dlq", "list", "--since", Timestamp.now.rfc3339] + common, directory: directory)
        #expect(recent.status == 0 && !recent.stderr.contains("keeps offsets from"), "\(recent.stderr)")
    }
}
