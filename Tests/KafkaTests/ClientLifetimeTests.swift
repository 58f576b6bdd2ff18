import Foundation
import Kafka
import Testing

/// It counts the process's librdkafka threads, so it runs alone: `scripts/run-tests.sh` runs it after
/// the other tests, whose clients would start and stop threads beside it.
@Suite("Kafka clients free their handles")
struct ClientLifetimeTests {
    /// A handle kept alive by its own client (a job that captured it, say) would keep librdkafka's
    /// threads and broker connections after its owner is gone.
    @Test("a used and closed producer, consumer, reader and admin leave no librdkafka thread behind")
    func handlesAreDestroyed() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.lifetime", partitions: 1)
        let threadsBefore = librdkafkaThreads()
        do {
            let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
            try await producer.send(KafkaMessage(topic: "t.lifetime", key: "k", value: [1]))
            #expect(await producer.isClusterReachable(timeoutMs: 5_000))
            await producer.drainAndClose(flushTimeoutMs: 1_000)

            let consumer = try KafkaConsumer(config: ConsumerConfig(client: client(cluster), groupId: "g-lifetime"), topics: ["t.lifetime"])
            _ = try await consumer.poll(timeoutMs: 100)
            _ = await consumer.lag()
            await consumer.close()

            let reader = try TopicReader(client: client(cluster), topic: "t.lifetime")
            #expect(try await reader.partitions() == [0])
            await reader.close()

            let admin = try KafkaAdmin(client: client(cluster))
            _ = try? await admin.deleteRecords(topic: "t.lifetime", beforeOffsets: [0: 0], timeoutMs: 2_000)
            #expect(librdkafkaThreads() > threadsBefore)
        }
        // A client's handle is destroyed on its worker thread once the client is gone, and librdkafka
        // joins its own threads then: on a loaded machine that takes a moment. A leaked handle keeps
        // its threads for good.
        let deadline = ContinuousClock.now + .seconds(10)
        while librdkafkaThreads() > threadsBefore, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(librdkafkaThreads() <= threadsBefore)
    }

    /// Threads librdkafka started in this process (it names them `rdk:...`).
    private func librdkafkaThreads() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            ((try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "").hasPrefix("rdk:")
        }.count
    }
}
