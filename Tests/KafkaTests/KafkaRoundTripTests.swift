import Foundation
import Kafka
import Testing

@Suite("Kafka against the embedded mock cluster")
struct KafkaRoundTripTests {
    @Test("a produced record comes back to a group consumer with key, value and headers")
    func produceConsumeWithHeaders() async throws {
        let cluster = try MockCluster(brokers: 3)
        try cluster.createTopic("t.roundtrip", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers)))
        defer { producer.close() }

        let headers = [KafkaHeader(name: "ce_id", string: "iaptic:1:p"), KafkaHeader(name: "empty", value: []),
                       KafkaHeader(name: "null", value: nil)]
        let delivery = try await producer.send(KafkaMessage(topic: "t.roundtrip", key: "k1", value: Array("v1".utf8), headers: headers))
        #expect(delivery.topic == "t.roundtrip")
        #expect(delivery.offset == 0)

        let consumer = try KafkaConsumer(config: ConsumerConfig(client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers),
                                                                groupId: "g-roundtrip"), topics: ["t.roundtrip"])
        let record = try #require(try await withTimeout { try await consumer.next() })
        #expect(record.keyString == "k1")
        #expect(record.value == Array("v1".utf8))
        #expect(record.headers == headers)
        #expect(record.offset == 0)
        await consumer.close()
    }

    @Test("a group resumes after the last committed offset, not after the last consumed one")
    func manualCommit() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.commit", partitions: 1)
        let client = KafkaClientConfig(bootstrapServers: cluster.bootstrapServers)
        let producer = try KafkaProducer(config: ProducerConfig(client: client))
        defer { producer.close() }
        for i in 0..<4 {
            try await producer.send(KafkaMessage(topic: "t.commit", key: "k", value: Array("m\(i)".utf8)))
        }

        let first = try KafkaConsumer(config: ConsumerConfig(client: client, groupId: "g-commit"), topics: ["t.commit"])
        let r0 = try #require(try await withTimeout { try await first.next() })
        let r1 = try #require(try await withTimeout { try await first.next() })
        try await first.commit(r1)
        // Consumed but never committed: must be redelivered to the next member.
        _ = try #require(try await withTimeout { try await first.next() })
        #expect(try await first.committedOffset(topic: "t.commit", partition: 0) == 2)
        await first.close()
        #expect(String(decoding: r0.value, as: UTF8.self) == "m0")

        let second = try KafkaConsumer(config: ConsumerConfig(client: client, groupId: "g-commit"), topics: ["t.commit"])
        let next = try #require(try await withTimeout { try await second.next() })
        #expect(String(decoding: next.value, as: UTF8.self) == "m2")
        await second.close()
    }

    @Test("with every broker down a send fails with a delivery timeout instead of hanging")
    func deliveryTimesOutWhenBrokersAreDown() async throws {
        let cluster = try MockCluster(brokers: 2)
        try cluster.createTopic("t.down", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(
            client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers), deliveryTimeoutMs: 1_500))
        defer { producer.close() }
        try await producer.send(KafkaMessage(topic: "t.down", key: "k", value: [1]))

        cluster.setAllBrokers(up: false)
        // withTimeout catches a hang; the failure itself must be librdkafka's delivery timeout.
        let failure: Result<KafkaDelivery, KafkaError> = try await withTimeout(60) {
            do { return .success(try await producer.send(KafkaMessage(topic: "t.down", key: "k", value: [2]))) }
            catch let error as KafkaError { return .failure(error) }
        }
        guard case .failure(let error) = failure else { Issue.record("a send to a dead cluster succeeded"); return }
        #expect(error.isDeliveryTimeout)

        // Once the brokers are back, sends succeed again (after librdkafka's reconnect backoff).
        cluster.setAllBrokers(up: true)
        var delivered: KafkaDelivery?
        for _ in 0..<10 where delivered == nil {
            delivered = try? await producer.send(KafkaMessage(topic: "t.down", key: "k", value: [3]))
        }
        #expect(delivered?.partition == 0)
    }

    @Test("a closed producer refuses new records")
    func closedProducer() async throws {
        let cluster = try MockCluster()
        let producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers)))
        producer.close()
        await #expect(throws: KafkaError.self) {
            try await producer.send(KafkaMessage(topic: "t.closed", key: "k", value: [1]))
        }
    }

    @Test("a bad librdkafka property is refused with its name")
    func badProperty() {
        #expect {
            _ = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(
                bootstrapServers: "127.0.0.1:1", properties: ["no.such.property": "1"])))
        } throws: { error in
            (error as? KafkaError)?.message.contains("no.such.property") == true
        }
    }
}

/// Fails the test rather than hanging it when a record never arrives.
func withTimeout<T: Sendable>(_ seconds: Int = 20, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimeoutError()
        }
        defer { group.cancelAll() }
        return try #require(try await group.next())
    }
}

struct TimeoutError: Error {}

@Suite("Kafka producer shutdown")
struct KafkaShutdownTests {
    @Test("closing with records in flight fails each of them instead of leaving a sender hanging")
    func closeWithRecordsInFlight() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.close", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(
            client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers), deliveryTimeoutMs: 300_000))
        try await producer.send(KafkaMessage(topic: "t.close", key: "k", value: [0]))
        cluster.setAllBrokers(up: false)
        let pending = (0..<5).map { i in
            Task { try await producer.send(KafkaMessage(topic: "t.close", key: "k", value: [UInt8(i)])) }
        }
        try await Task.sleep(for: .milliseconds(300))
        let started = ContinuousClock.now
        producer.close(flushTimeoutMs: 500)
        for task in pending {
            await #expect(throws: KafkaError.self) { _ = try await task.value }
        }
        #expect(ContinuousClock.now - started < .seconds(60), "failed by close, not by the 300 s delivery timeout")
        await #expect(throws: KafkaError.self) { try await producer.send(KafkaMessage(topic: "t.close", key: "k", value: [9])) }
    }
}
