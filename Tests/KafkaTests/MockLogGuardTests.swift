import Foundation
import Kafka
import Testing

@Suite("The embedded broker's log limit: the mock drops what no one committed, the guard refuses first")
struct MockLogGuardTests {
    static let value = [UInt8](repeating: 0x61, count: 64 * 1024)

    @Test("without the guard, the mock drops a partition's oldest records past 5 MiB though no group committed them")
    func mockDropsUncommitted() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.drop", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        // 6 MiB of acknowledged records: the first ones are gone.
        for _ in 0..<96 { try await producer.send(KafkaMessage(topic: "t.drop", key: nil as String?, value: Self.value)) }
        let reader = try TopicReader(client: client(cluster), topic: "t.drop")
        let marks = try await reader.watermarks(partition: 0)
        await reader.close()
        #expect(marks.high == 96)
        #expect(marks.low > 0, "librdkafka's mock keeps \(MockLogGuard.partitionBytesLimit) bytes a partition")
        #expect(marks.high - marks.low <= Int64(MockLogGuard.partitionBytesLimit / Self.value.count))
    }

    @Test("with the guard, a record that would bring a partition's uncommitted records past the budget is refused, nothing acknowledged is dropped, and a commit makes room")
    func guardRefusesThenCommitFrees() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.guarded", partitions: 2)
        try cluster.createTopic("t.free", partitions: 1)
        let logGuard = MockLogGuard(topics: ["t.guarded"])
        var guarded = client(cluster)
        guarded.mockLogGuard = logGuard
        let producer = try KafkaProducer(config: ProducerConfig(client: guarded))
        defer { producer.close() }
        let consumer = try KafkaConsumer(config: ConsumerConfig(client: guarded, groupId: "g-guard"), topics: ["t.guarded"])

        // Partition 0 fills; partition 1 holds one record.
        try await producer.send(KafkaMessage(topic: "t.guarded", key: nil as String?, value: Self.value, partition: 1))
        var acknowledged = 0
        var refusal: KafkaError?
        for _ in 0..<200 {
            do {
                try await producer.send(KafkaMessage(topic: "t.guarded", key: nil as String?, value: Self.value, partition: 0))
                acknowledged += 1
            } catch {
                refusal = error
                break
            }
        }
        let refused = try #require(refusal)
        #expect(refused.kind == .embeddedBrokerFull)
        #expect(refused.message.contains("of a t.guarded partition that its consumers have not committed"), "\(refused.message)")
        let charge = Self.value.count + 100
        #expect(acknowledged == logGuard.budgetBytes / charge, "refused at the budget, not before")
        #expect(logGuard.refusals(topics: ["t.guarded", "t.free"]).count == 1, "partition 0 has no room for another record; partition 1 has")
        #expect(logGuard.usage().first { $0.partition == 0 }?.bytes == acknowledged * charge)
        // An unguarded topic is not held back.
        for _ in 0..<100 { try await producer.send(KafkaMessage(topic: "t.free", key: nil as String?, value: Self.value)) }

        let reader = try TopicReader(client: client(cluster), topic: "t.guarded")

        // The group reads and commits half: that half's room comes back, the other half still counts.
        var read = 0
        for _ in 0..<500 where read < acknowledged / 2 {
            if let record = try await consumer.poll(timeoutMs: 100), record.partition == 0 { read += 1 }
        }
        #expect(read == acknowledged / 2)
        try await consumer.commit([TopicPartition(topic: "t.guarded", partition: 0): Int64(acknowledged / 2)])
        #expect(logGuard.usage().first { $0.partition == 0 }?.bytes == (acknowledged - acknowledged / 2) * charge)
        let more = await Self.acknowledgedUntilRefused(producer, KafkaMessage(topic: "t.guarded", key: nil as String?, value: Self.value, partition: 0))
        #expect(more == acknowledged / 2, "exactly the committed half's room is taken again")
        // Past what the mock keeps of the partition (94 records of 64 KiB): it dropped only what the group had committed.
        let marks = try await reader.watermarks(partition: 0)
        #expect(marks.high == Int64(acknowledged + more))
        #expect(Int(marks.high) * Self.value.count > MockLogGuard.partitionBytesLimit)
        #expect(marks.low > 0 && marks.low <= Int64(acknowledged / 2), "\(marks)")
        await reader.close()
        await consumer.close()
    }

    @Test("the lowest commit of the groups reading a topic counts, and offsets another producer wrote are charged once seen")
    func slowestGroupAndOthersRecords() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.groups", partitions: 1)
        let logGuard = MockLogGuard(topics: ["t.groups"], budgetBytes: 20 * 1_124)
        var guarded = client(cluster)
        guarded.mockLogGuard = logGuard
        let producer = try KafkaProducer(config: ProducerConfig(client: guarded))
        let outsider = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer {
            producer.close()
            outsider.close()
        }
        let fast = try KafkaConsumer(config: ConsumerConfig(client: guarded, groupId: "g-fast"), topics: ["t.groups"])
        let slow = try KafkaConsumer(config: ConsumerConfig(client: guarded, groupId: "g-slow"), topics: ["t.groups"])
        let kib = [UInt8](repeating: 1, count: 1_024)

        for _ in 0..<10 { try await producer.send(KafkaMessage(topic: "t.groups", key: nil as String?, value: kib)) }
        // A group commits once it has joined: each reads the records first.
        for consumer in [fast, slow] {
            var read = 0
            for _ in 0..<300 where read < 10 { if try await consumer.poll(timeoutMs: 100) != nil { read += 1 } }
            #expect(read == 10)
        }
        try await fast.commit([TopicPartition(topic: "t.groups", partition: 0): 10])
        #expect(logGuard.usage().first?.records == 10, "g-slow has committed nothing")
        try await slow.commit([TopicPartition(topic: "t.groups", partition: 0): 4])
        #expect(logGuard.usage().first?.records == 6)

        // Five records of another process, then one of ours: the gap is charged at the largest charge.
        for _ in 0..<5 { try await outsider.send(KafkaMessage(topic: "t.groups", key: nil as String?, value: kib)) }
        try await producer.send(KafkaMessage(topic: "t.groups", key: nil as String?, value: kib))
        let use = try #require(logGuard.usage().first)
        #expect(use.bytes == 12 * 1_124)
        #expect(use.records == 12)
        await fast.close()
        await slow.close()
    }

    @Test("once a record is refused, the later records of the same call to the topic are refused too: none overtakes it")
    func refusalKeepsOrder() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.order", partitions: 1)
        let charge = 1_024 + 100
        let logGuard = MockLogGuard(topics: ["t.order"], budgetBytes: 3 * charge + 150)
        var guarded = client(cluster)
        guarded.mockLogGuard = logGuard
        let producer = try KafkaProducer(config: ProducerConfig(client: guarded))
        defer { producer.close() }
        let large = KafkaMessage(topic: "t.order", key: nil as String?, value: [UInt8](repeating: 2, count: 1_024))
        // Two fit; the third (too large for what is left) is refused, and the small fourth after it too.
        let small = KafkaMessage(topic: "t.order", key: nil as String?, value: [1])
        let results = await producer.sendEach([large, large, large, large, small])
        let outcomes = results.map { result -> String in
            switch result {
            case .success: "ok"
            case .failure(let error): error.kind == .embeddedBrokerFull ? "full" : "\(error)"
            }
        }
        #expect(outcomes == ["ok", "ok", "ok", "full", "full"])
        // Alone, the small one fits: it was refused for order's sake only.
        #expect(await producer.sendEach([small]).allSatisfy { if case .success = $0 { true } else { false } })
    }

    /// Sends `message` again and again; how many were acknowledged before the first refusal.
    static func acknowledgedUntilRefused(_ producer: KafkaProducer, _ message: KafkaMessage) async -> Int {
        var count = 0
        while count < 1_000 {
            guard case .success = await producer.sendEach([message])[0] else { break }
            count += 1
        }
        return count
    }
}
