import Foundation
import Kafka
import Synchronization
import Testing

@Suite("Group-less topic reader against the mock cluster")
struct TopicReaderTests {
    @Test("reads exactly the records of a 3-partition topic, keys, values and headers intact, and stops at the start's end")
    func readsEveryRecord() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.read", partitions: 3)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        // Partition 1 stays empty (low == high).
        var produced: [KafkaMessage] = []
        for (partition, count) in [(Int32(0), 3), (2, 5)] {
            for i in 0..<count {
                let message = KafkaMessage(topic: "t.read", key: i == 0 ? nil : "key-\(partition)-\(i)", value: Array("value-\(partition)-\(i)".utf8),
                                           headers: [KafkaHeader(name: "n", string: "\(i)"), KafkaHeader(name: "null", value: nil)],
                                           partition: partition)
                try await producer.send(message)
                produced.append(message)
            }
        }

        let reader = try TopicReader(client: client(cluster), topic: "t.read")
        #expect(try await reader.partitions() == [0, 1, 2])
        #expect(try await reader.watermarks(partition: 1) == (low: 0, high: 0))
        #expect(try await reader.watermarks(partition: 2) == (low: 0, high: 5))

        let read = Collected()
        try await withTimeout {
            try await reader.read(from: [:]) { record in
                // Written after the read began: beyond the end it measured, so never read.
                if read.count == 0 {
                    try await producer.send(KafkaMessage(topic: "t.read", key: "late", value: [9], partition: 2))
                }
                read.append(record)
                return true
            }
        }
        let records = read.records
        #expect(records.count == produced.count)
        for message in produced {
            let matches = records.filter { $0.partition == message.partition && $0.value == message.value }
            #expect(matches.count == 1, "value-\(String(decoding: message.value, as: UTF8.self))")
            #expect(matches.first?.key == message.key)
            #expect(matches.first?.headers == message.headers)
        }
        for partition: Int32 in [0, 2] {
            let offsets = records.filter { $0.partition == partition }.map(\.offset)
            #expect(offsets == Array(0..<Int64(offsets.count)), "in offset order")
        }
        await reader.close()
        await #expect(throws: KafkaError.self) { try await reader.partitions() }
    }

    @Test("reads from offsets derived from record timestamps")
    func readsFromTimestamp() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.since", partitions: 2)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        for partition: Int32 in [0, 1] { try await produce(producer, "t.since", partition: partition, 0..<3) }
        try await Task.sleep(for: .milliseconds(50))
        let since = Int64(Date().timeIntervalSince1970 * 1000)
        try await Task.sleep(for: .milliseconds(50))
        for partition: Int32 in [0, 1] { try await produce(producer, "t.since", partition: partition, 3..<5) }

        let reader = try TopicReader(client: client(cluster), topic: "t.since")
        // The records carry their create time, so the offsets can be derived from them too.
        let all = try await readAll(reader, from: [:])
        var derived: [Int32: Int64] = [:]
        for partition: Int32 in [0, 1] {
            derived[partition] = all.filter { $0.partition == partition && ($0.timestampMs ?? 0) >= since }.map(\.offset).min()
        }
        #expect(derived == [0: 3, 1: 3])

        // The broker's "no record that recent" (-1) is the high watermark. (The embedded broker gives that
        // answer to every lookup, which is why the operator commands filter by record time instead.)
        #expect(try await reader.offset(forTimestampMs: since + 3_600_000, partition: 0) == 5)

        #expect(try await readAll(reader, from: derived).map(\.offset).sorted() == [3, 3, 4, 4])
        await reader.close()
    }

    @Test("a start below the low watermark starts at it; at or past the high watermark reads nothing; unknown partitions are refused")
    func startOffsets() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.start", partitions: 2)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        for partition: Int32 in [0, 1] { try await produce(producer, "t.start", partition: partition, 0..<5) }

        let reader = try TopicReader(client: client(cluster), topic: "t.start")
        let mixed = try await readAll(reader, from: [0: -2, 1: 99])
        #expect(mixed.filter { $0.partition == 0 }.map(\.offset) == [0, 1, 2, 3, 4])
        #expect(mixed.filter { $0.partition == 1 }.isEmpty)
        #expect(try await readAll(reader, from: [0: -1, 1: 5]).isEmpty)
        #expect(try await readAll(reader, from: [0: 4, 1: 2]).map(\.offset).sorted() == [2, 3, 4, 4])
        await #expect(throws: KafkaError.self) { try await readAll(reader, from: [7: 0]) }
        await reader.close()
    }

    @Test("terminates at once on an empty topic")
    func emptyTopic() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.empty", partitions: 3)
        let reader = try TopicReader(client: client(cluster), topic: "t.empty")
        let started = ContinuousClock.now
        #expect(try await readAll(reader, from: [:]).isEmpty)
        #expect(ContinuousClock.now - started < .seconds(5))
        await reader.close()
    }

    @Test("a topic nobody created reads as empty and the read ends")
    func unknownTopic() async throws {
        let cluster = try MockCluster()
        let reader = try TopicReader(client: client(cluster), topic: "t.nope")
        // `tollgate dlq list` before any dead letter: nothing, promptly. (A real cluster with
        // auto-creation off refuses the metadata request instead; the embedded broker creates the topic.)
        #expect(try await readAll(reader, from: [:]).isEmpty)
        await reader.close()
    }

    @Test("a read against an unreachable cluster fails instead of hanging")
    func unreachableCluster() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.down", partitions: 1)
        let reader = try TopicReader(client: client(cluster), topic: "t.down", requestTimeoutMs: 1_000)
        #expect(try await reader.partitions() == [0])
        cluster.setAllBrokers(up: false)
        await #expect(throws: KafkaError.self) { try await readAll(reader, from: [:]) }
        await reader.close()
    }

    @Test("stops when the handler returns false, and the reader can read again")
    func stopsEarly() async throws {
        let cluster = try MockCluster()
        try cluster.createTopic("t.stop", partitions: 1)
        let producer = try KafkaProducer(config: ProducerConfig(client: client(cluster)))
        defer { producer.close() }
        try await produce(producer, "t.stop", partition: 0, 0..<6)

        let reader = try TopicReader(client: client(cluster), topic: "t.stop")
        let calls = Collected()
        try await withTimeout {
            try await reader.read(from: [:]) { record in
                calls.append(record)
                return calls.count < 2
            }
        }
        #expect(calls.records.map(\.offset) == [0, 1])
        #expect(try await readAll(reader, from: [0: 4]).map(\.offset) == [4, 5])
        await reader.close()
    }
}

/// Records handed to a `@Sendable` handler.
final class Collected: Sendable {
    private let storage = Mutex<[KafkaRecord]>([])
    func append(_ record: KafkaRecord) { storage.withLock { $0.append(record) } }
    var records: [KafkaRecord] { storage.withLock { $0 } }
    var count: Int { storage.withLock { $0.count } }
}

func readAll(_ reader: TopicReader, from start: [Int32: Int64]) async throws -> [KafkaRecord] {
    let collected = Collected()
    try await withTimeout {
        try await reader.read(from: start) { record in
            collected.append(record)
            return true
        }
    }
    return collected.records
}
