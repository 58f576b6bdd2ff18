import Foundation
import Kafka
import Testing

@Suite("Consumer poll, pause, seek, resume and lag against the mock cluster")
struct ConsumerFlowControlTests {
    @Test("poll returns nil when nothing arrives within the timeout, and nil at once after close")
    func pollTimesOut() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.poll", partitions: 1)
        let consumer = try KafkaConsumer(config: ConsumerConfig(client: client(cluster), groupId: "g-poll"), topics: ["t.poll"])

        let started = ContinuousClock.now
        let record = try await consumer.poll(timeoutMs: 300)
        let waited = ContinuousClock.now - started
        #expect(record == nil)
        #expect(waited >= .milliseconds(250))
        #expect(waited < .seconds(3))
        #expect(!consumer.isClosed)

        await consumer.close()
        let afterClose = ContinuousClock.now
        #expect(try await consumer.poll(timeoutMs: 5_000) == nil)
        #expect(ContinuousClock.now - afterClose < .seconds(1))
        #expect(consumer.isClosed)
        await #expect(throws: KafkaError.self) { try await consumer.pause(topic: "t.poll", partition: 0) }
    }

    @Test("a paused and seeked partition redelivers the held record on resume, while the other partition flows")
    func pauseSeekResume() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.pause", partitions: 2)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        try await produce(producer, "t.pause", partition: 0, 0..<10)
        try await produce(producer, "t.pause", partition: 1, 0..<5)

        let consumer = try KafkaConsumer(config: ConsumerConfig(client: client(cluster), groupId: "g-pause"), topics: ["t.pause"])
        var seen = Seen()
        // Read until partition 0's first record: the records after it are prefetched by now.
        let held = try await pollUntil(consumer, into: &seen) { $0.records.last?.partition == 0 }
        seen.remove(held)
        try await consumer.pause(topic: "t.pause", partition: 0)
        try await consumer.seek(topic: "t.pause", partition: 0, offset: held.offset)

        // Written after the pause: partition 1 must keep flowing meanwhile.
        try await produce(producer, "t.pause", partition: 1, 5..<10)
        try await pollUntil(consumer, into: &seen) { $0.offsets(1) == Array(0..<10) }
        #expect(try await consumer.poll(timeoutMs: 700) == nil, "nothing from the paused partition")
        #expect(seen.offsets(0) == [], "prefetched records of the paused partition were dropped")

        try await consumer.resume(topic: "t.pause", partition: 0)
        let redelivered = try await pollUntil(consumer, into: &seen) { $0.records.last?.partition == 0 }
        #expect(redelivered.offset == held.offset)
        #expect(redelivered.value == held.value)
        try await pollUntil(consumer, into: &seen) { $0.offsets(0).last == 9 }
        #expect(try await consumer.poll(timeoutMs: 500) == nil)
        #expect(seen.offsets(0) == Array(held.offset..<10), "no record lost or repeated on the paused partition")
        #expect(seen.offsets(1) == Array(0..<10), "no record lost or repeated on the flowing one")
        #expect(seen.records.allSatisfy { $0.value == Array("p\($0.partition)-\($0.offset)".utf8) })
        await consumer.close()
    }

    @Test("resume without a seek continues after the last returned record")
    func pauseResumeWithoutSeek() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.resume", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        try await produce(producer, "t.resume", partition: 0, 0..<8)

        let consumer = try KafkaConsumer(config: ConsumerConfig(client: client(cluster), groupId: "g-resume"), topics: ["t.resume"])
        var seen = Seen()
        try await pollUntil(consumer, into: &seen) { $0.records.last?.offset == 2 }
        try await consumer.pause(topic: "t.resume", partition: 0)
        #expect(try await consumer.poll(timeoutMs: 500) == nil)
        try await consumer.resume(topic: "t.resume", partition: 0)
        try await pollUntil(consumer, into: &seen) { $0.records.last?.offset == 7 }
        #expect(try await consumer.poll(timeoutMs: 300) == nil)
        #expect(seen.offsets(0) == Array(0..<8))
        await consumer.close()
    }

    @Test("assignment and lag report position and high watermark after consuming some records")
    func lagAfterConsuming() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.lag", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        try await produce(producer, "t.lag", partition: 0, 0..<10)

        let consumer = try KafkaConsumer(config: ConsumerConfig(client: client(cluster), groupId: "g-lag"), topics: ["t.lag"])
        var seen = Seen()
        try await pollUntil(consumer, into: &seen) { $0.records.last?.offset == 3 }
        let assigned = await consumer.assignment()
        #expect(assigned.map(\.topic) == ["t.lag"])
        #expect(assigned.map(\.partition) == [0])
        #expect(await consumer.lag() == [PartitionLag(topic: "t.lag", partition: 0, position: 4, highWatermark: 10)])
        #expect(await consumer.lag().first?.lag == 6)

        // A seek moves the position back, so a held record counts as lag.
        try await consumer.pause(topic: "t.lag", partition: 0)
        try await consumer.seek(topic: "t.lag", partition: 0, offset: 1)
        #expect(await consumer.lag() == [PartitionLag(topic: "t.lag", partition: 0, position: 1, highWatermark: 10)])
        try await consumer.resume(topic: "t.lag", partition: 0)
        try await pollUntil(consumer, into: &seen) { $0.records.last?.offset == 1 }
        #expect(await consumer.lag().first?.position == 2)
        await consumer.close()
        #expect(await consumer.lag().isEmpty)
    }
}

/// Records returned so far, checked for loss and repeats per partition.
struct Seen {
    var records: [KafkaRecord] = []

    func offsets(_ partition: Int32) -> [Int64] {
        records.filter { $0.partition == partition }.map(\.offset)
    }

    mutating func remove(_ record: KafkaRecord) {
        records.removeAll { $0.partition == record.partition && $0.offset == record.offset }
    }
}

func client(_ cluster: MockCluster) -> KafkaClientConfig {
    KafkaClientConfig(bootstrapServers: cluster.bootstrapServers)
}

/// Produces values `p<partition>-<i>` keyed `k<i>` to one partition, one after the other so
/// that offsets follow `i`.
func produce(_ producer: KafkaProducer, _ topic: String, partition: Int32, _ range: Range<Int>) async throws {
    for i in range {
        try await producer.send(KafkaMessage(topic: topic, key: "k\(i)", value: Array("p\(partition)-\(i)".utf8), partition: partition))
    }
}

/// Polls, recording every record, until `done` holds after one; returns that record.
/// Fails after 20 s instead of hanging.
@discardableResult
func pollUntil(_ consumer: KafkaConsumer, into seen: inout Seen, _ done: (Seen) -> Bool) async throws -> KafkaRecord {
    let deadline = ContinuousClock.now + .seconds(20)
    while ContinuousClock.now < deadline {
        guard let record = try await consumer.poll(timeoutMs: 200) else { continue }
        seen.records.append(record)
        if done(seen) { return record }
    }
    throw TimeoutError()
}
