import Foundation
@testable import Gateway
import Kafka
import Logging
@testable import Spool
import Store
import Testing

@Suite("Delivery spool: fsynced SQLite, order, bounds, restarts")
struct SpoolTests {
    static let logger = Logger(label: "spool-test")

    static func temporaryPath() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("spool.sqlite").path
    }

    static func messages(_ index: Int, bodyBytes: Int = 100) -> [KafkaMessage] {
        [KafkaMessage(topic: "tollgate.raw.apple", key: "k-\(index)", value: Array(repeating: UInt8(index % 251), count: bodyBytes),
                      headers: [KafkaHeader(name: "ce_id", string: "apple:\(index)"), KafkaHeader(name: "empty", value: [])]),
         KafkaMessage(topic: "tollgate.events", key: nil as [UInt8]?, value: Array("{\"i\":\(index)}".utf8),
                      headers: [KafkaHeader(name: "null", value: nil)], partition: 2)]
    }

    @Test("records keep their exact bytes: keys, null and empty header values, partitions")
    func encodingRoundTrip() throws {
        let original = Self.messages(7)
        let decoded = try #require(SpoolEncoding.decode(SpoolEncoding.encode(original)))
        #expect(decoded.count == 2)
        for (a, b) in zip(original, decoded) {
            #expect(a.topic == b.topic)
            #expect(a.key == b.key)
            #expect(a.value == b.value)
            #expect(a.headers == b.headers)
            #expect(a.partition == b.partition)
        }
        let encoded = SpoolEncoding.encode(original)
        for cut in [0, 1, 4, encoded.count / 2, encoded.count - 1] {
            #expect(SpoolEncoding.decode(Array(encoded.prefix(cut))) == nil, "a truncated row (\(cut) bytes) is refused")
        }
        #expect(SpoolEncoding.decode(encoded + [0]) == nil, "trailing bytes are refused")
    }

    @Test("concurrent appends are all on disk, in one order, and survive a reopen")
    func appendAndReopen() async throws {
        let path = try Self.temporaryPath()
        let spool = try await DeliverySpool.open(path: path, maxBytes: 10_000_000, logger: Self.logger)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask { try? await spool.append(Self.messages(index)) }
            }
        }
        #expect(spool.stats.records == 200)
        #expect(spool.stats.oldestSpooledAtMs != nil)
        let firstPass = try await spool.oldest(limit: 1_000)
        #expect(firstPass.count == 200)
        #expect(Set(firstPass.compactMap { $0.messages.first?.headers.string("ce_id") }).count == 200)
        #expect(firstPass.map(\.id) == firstPass.map(\.id).sorted(), "oldest first")
        await spool.close()

        let reopened = try await DeliverySpool.open(path: path, maxBytes: 10_000_000, logger: Self.logger)
        #expect(reopened.stats.records == 200)
        #expect(reopened.stats.bytes == spool.stats.bytes)
        let secondPass = try await reopened.oldest(limit: 1_000)
        #expect(secondPass.map(\.id) == firstPass.map(\.id))
        #expect(secondPass.first?.messages.first?.value == firstPass.first?.messages.first?.value)
        await reopened.close()
    }

    @Test("settling forgets published deliveries and keeps only the unacknowledged records of the others")
    func settle() async throws {
        let spool = try await DeliverySpool.open(path: try Self.temporaryPath(), maxBytes: 10_000_000, logger: Self.logger)
        for index in 0..<3 { try await spool.append(Self.messages(index)) }
        let all = try await spool.oldest(limit: 10)
        let partial = try #require(all.last)
        try await spool.settle(published: [all[0].id], remaining: [partial.id: [partial.messages[1]]])
        let left = try await spool.oldest(limit: 10)
        #expect(left.map(\.id) == [all[1].id, partial.id])
        #expect(left.last?.messages.count == 1)
        #expect(left.last?.messages.first?.topic == "tollgate.events")
        #expect(spool.stats.records == 2)
        try await spool.settle(published: left.map(\.id))
        #expect(spool.isEmpty)
        #expect(spool.stats.bytes == 0)
        #expect(spool.stats.oldestSpooledAtMs == nil)
        await spool.close()
    }

    @Test("a full spool refuses the delivery and keeps what it holds; room comes back once the relay settles")
    func full() async throws {
        let spool = try await DeliverySpool.open(path: try Self.temporaryPath(), maxBytes: 4_000, logger: Self.logger)
        var accepted = 0
        var refusal: SpoolError?
        for index in 0..<100 {
            do {
                try await spool.append(Self.messages(index, bodyBytes: 500))
                accepted += 1
            } catch {
                refusal = error
                break
            }
        }
        #expect(refusal?.kind == .full)
        #expect(accepted > 0)
        #expect(spool.stats.records == accepted)
        #expect(spool.stats.bytes <= 4_000)
        let oldest = try await spool.oldest(limit: 1)
        try await spool.settle(published: oldest.map(\.id))
        try await spool.append(Self.messages(1_000, bodyBytes: 500))
        await spool.close()
    }

    @Test("records are stored as BLOBs of their encoding, and the bytes counted are the BLOBs' sizes")
    func blobRows() async throws {
        let path = try Self.temporaryPath()
        let spool = try await DeliverySpool.open(path: path, maxBytes: 1_000_000, logger: Self.logger)
        try await spool.append(Self.messages(3))
        #expect(spool.stats.bytes == SpoolEncoding.encode(Self.messages(3)).count)
        await spool.close()
        let database = try await SQLDatabase.open(url: "sqlite:" + path, logger: Self.logger)
        let row = try await database.read { connection throws(StoreError) in
            try connection.query("SELECT typeof(records) AS type, records, bytes FROM spool").first
        }
        await database.close()
        #expect(row?.text("type") == "blob")
        #expect(row?.blob("records") == SpoolEncoding.encode(Self.messages(3)))
    }

    @Test("a spool written by the previous version (records as base64 text) is migrated and relayed in order")
    func upgradesTextRows() async throws {
        let path = try Self.temporaryPath()
        // Version 1 as the previous release created and filled it, one row not base64 at all.
        let old = try await SQLDatabase.open(url: "sqlite:" + path, logger: Self.logger)
        try await old.migrate([Migration(version: 1, name: "spool") { _ in
            """
            CREATE TABLE spool (id INTEGER PRIMARY KEY AUTOINCREMENT, spooled_at INTEGER NOT NULL, bytes INTEGER NOT NULL,
                                records TEXT NOT NULL);
            CREATE TABLE spool_damaged (id INTEGER PRIMARY KEY, spooled_at INTEGER NOT NULL, bytes INTEGER NOT NULL,
                                        records TEXT NOT NULL);
            """
        }])
        let rows = (0..<3).map { Data(SpoolEncoding.encode(Self.messages($0))).base64EncodedString() } + ["not base64 !"]
        try await old.transaction { connection throws(StoreError) in
            for (index, row) in rows.enumerated() {
                try connection.execute("INSERT INTO spool (spooled_at, bytes, records) VALUES ($1, $2, $3)",
                                       [.int(Int64(1_000 + index)), .int(Int64(row.utf8.count)), .text(row)])
            }
        }
        await old.close()

        let spool = try await DeliverySpool.open(path: path, maxBytes: 1_000_000, logger: Self.logger)
        #expect(spool.stats.records == 4)
        let expectedBytes = (0..<3).reduce(0) { $0 + SpoolEncoding.encode(Self.messages($1)).count } + rows[3].utf8.count
        #expect(spool.stats.bytes == expectedBytes, "the upgraded rows count their BLOBs' sizes")
        let waiting = try await spool.oldest(limit: 10)
        #expect(waiting.map { $0.messages.first?.headers.string("ce_id") } == ["apple:0", "apple:1", "apple:2"])
        #expect(waiting.first?.messages.first?.value == Self.messages(0).first?.value)
        #expect(spool.stats.records == 3, "the row that was not base64 is set aside, not relayed")
        try await spool.settle(published: waiting.map(\.id))
        #expect(spool.isEmpty)
        try await spool.append(Self.messages(9))
        #expect(try await spool.oldest(limit: 10).count == 1)
        await spool.close()
    }

    @Test("a second process (or gateway) cannot open a spool in use; it can once the first closes it")
    func exclusive() async throws {
        let path = try Self.temporaryPath()
        let first = try await DeliverySpool.open(path: path, maxBytes: 1_000_000, logger: Self.logger)
        await #expect(throws: SpoolError.self) { try await DeliverySpool.open(path: path, maxBytes: 1_000_000, logger: Self.logger) }
        await first.close()
        let second = try await DeliverySpool.open(path: path, maxBytes: 1_000_000, logger: Self.logger)
        await second.close()
    }

    @Test("a closed spool refuses appends instead of losing them")
    func closed() async throws {
        let spool = try await DeliverySpool.open(path: try Self.temporaryPath(), maxBytes: 1_000_000, logger: Self.logger)
        await spool.close()
        await #expect(throws: SpoolError.self) { try await spool.append(Self.messages(1)) }
    }
}

@Suite("Recent deliveries: the deduplication window")
struct RecentDeliveriesTests {
    @Test("ids are remembered for the window, all of a delivery's ids must match")
    func window() {
        let recent = RecentDeliveries(window: .seconds(10), capacity: 100)
        let start = ContinuousClock.now
        recent.insert(["a", "b"], now: start)
        #expect(recent.containsAll(["a"], now: start + .seconds(1)))
        #expect(recent.containsAll(["a", "b"], now: start + .seconds(9)))
        #expect(!recent.containsAll(["a", "c"], now: start + .seconds(1)), "a delivery with one new event is published")
        #expect(!recent.containsAll(["a"], now: start + .seconds(10)), "past the window")
        #expect(!recent.containsAll([], now: start), "nothing to match is never a duplicate")
    }

    @Test("memory is bounded: past the capacity the oldest ids go first")
    func capacity() {
        let recent = RecentDeliveries(window: .seconds(600), capacity: 3)
        for id in ["1", "2", "3", "4"] { recent.insert([id]) }
        #expect(recent.count == 3)
        #expect(!recent.containsAll(["1"]))
        #expect(recent.containsAll(["2", "3", "4"]))
        recent.insert(["3"])
        recent.insert(["5"])
        #expect(recent.count == 3)
        #expect(!recent.containsAll(["2"]))
    }

    @Test("capacity 0 or a zero window turns deduplication off")
    func off() {
        for recent in [RecentDeliveries(window: .seconds(600), capacity: 0), RecentDeliveries(window: .zero, capacity: 10)] {
            recent.insert(["a"])
            #expect(!recent.containsAll(["a"]))
        }
    }
}
