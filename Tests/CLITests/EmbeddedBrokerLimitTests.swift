import Foundation
import Kafka
import Outbound
import Store
import StoreTestSupport
import Testing
import Toolkit

/// `tollgate dev`'s embedded broker keeps about 5 MiB a partition and drops the oldest records past
/// that, applied or not. Here the store is down (its write lock held, as another writer would hold
/// it): the projection sends every event to the retry tier, whose consumer holds them (paused, seeked
/// back) until they are due and then fetches them again from the broker. Deliveries go on: without the
/// guard the tier's partition passes the limit and its oldest records are gone when they come due;
/// with it the tier refuses first, the projection stops, the events topic fills, and the gateway
/// spools, then answers 503, rather than answer 200 for what the broker would drop. Once the store is
/// back every delivery answered 200 is applied.
@Suite("tollgate dev past its embedded broker's limit")
struct EmbeddedBrokerLimitTests {
    static let secret = "embedded-limit-secret-0123456789"
    /// Purchases per delivery: one event each, about 1 KiB on the events topic.
    static let purchasesPerDelivery = 40
    /// How long the retry tier holds an event: the store comes back well before the first are due.
    static let retryDelayMs = 30_000

    @Test("with the store down, the gateway spools, then answers 503 with Retry-After, says why on /readyz and in a metric; every delivery answered 200 is applied once the store is back")
    func refusesRatherThanLoses() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-limit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = "sqlite:" + directory.appendingPathComponent("store.sqlite").path
        // The projection gives a locked store up at once (a transient failure: the retry tier).
        let config = """
            http: { host: 127.0.0.1, port: 0, maxBodyBytes: 131072 }
            kafka: { retryDelaysMs: [\(Self.retryDelayMs)] }
            store: { url: "\(store)?busy_timeout_ms=100" }
            spool: { maxBytes: 1048576 }
            log: { level: error }
            sources: { iaptic: { apps: [{ name: limits, secrets: [\(Self.secret)] }] } }
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        let fetcher = HTTPClientFetcher()

        try await withOwnDev(configPath: configPath, directory: directory) { base in
            _ = try await eventually("the gateway is ready") {
                try await fetcher.fetch(HTTPFetchRequest(url: base + "/readyz", timeout: .seconds(5))).status == 200 ? true : nil
            }
            // The workers consume: a first delivery is applied.
            let first = try await fetcher.fetch(HTTPFetchRequest(url: base + "/webhooks/iaptic", method: "POST", headers: [("Content-Type", "application/json")],
                                                                 body: Array(Self.delivery(-1).utf8), timeout: .seconds(30)))
            #expect(first.status == 200)
            let database = try await SQLDatabase.open(url: store, logger: TestDatabases.logger)
            defer { Task { await database.close() } }
            _ = try await eventually("the first delivery is applied") {
                try await Self.applied(database).contains("ntf--1:\(Self.purchaseIds[0])") ? true : nil
            }
            let posted = try await SQLiteWriteLock.holding(store) { _ in
                // Released before the first held events are due, however long posting took.
                let posted = try await Self.postUntilRefused(base, fetcher: fetcher, for: .seconds(10))
                // Read while refusing (the spool relay may make room again the moment the posting stops).
                let readiness = posted.readinessWhileRefused.joined(separator: "\n")
                #expect(!posted.readinessWhileRefused.isEmpty, "/readyz answered 503 while deliveries were refused: \(posted)")
                #expect(readiness.contains("the embedded broker is near what it keeps: tollgate.events partition"), "\(readiness)")
                #expect(readiness.contains("the spool is full"), "\(readiness)")
                #expect(posted.leastHeadroom < 64 * 1_024, "the fullest partition had next to no headroom: \(posted.headroom)")
                #expect(posted.headroom.contains { $0.contains(#"topic="tollgate.events-retry-\#(Self.retryDelayMs)""#) }, "\(posted.headroom)")
                let metrics = String(decoding: try await fetcher.fetch(HTTPFetchRequest(url: base + "/metrics", timeout: .seconds(5))).body,
                                     as: UTF8.self)
                var counted = posted
                counted.spooled = metrics.split(separator: "\n")
                    .first { $0.hasPrefix("tollgate_deliveries_written_total{") && $0.contains(#"outcome="spooled""#) }
                    .flatMap { $0.split(separator: " ").last.flatMap { Int(Double($0) ?? 0) } } ?? 0
                return counted
            }
            #expect(posted.refused > 0 && posted.retryAfterOnEvery503, "\(posted)")
            #expect(posted.spooled > 0, "some deliveries went to the spool before the 503s: \(posted)")
            // More than the broker keeps of a partition was answered 200.
            #expect(posted.accepted.count * Self.purchasesPerDelivery * 1_024 > MockLogGuard.partitionBytesLimit, "\(posted)")

            // The store is back: every event of every delivery answered 200 is applied.
            let missing = try await eventually("every accepted delivery is applied", within: .seconds(180), every: .seconds(1)) { () async throws -> [String]? in
                let applied = try await Self.applied(database)
                let missing = posted.accepted.flatMap { delivery in Self.purchaseIds.map { "ntf-\(delivery):\($0)" } }.filter { !applied.contains($0) }
                return missing.isEmpty ? missing : nil
            }
            #expect(missing.isEmpty)
        }
    }

    /// The applied events, by what ends an Iaptic event's id: its notification's id and its purchase's.
    static func applied(_ database: SQLDatabase) async throws -> Set<String> {
        try await database.read { connection throws(StoreError) in
            Set(try connection.query("SELECT event_id FROM processed_events").compactMap { row in
                row.text("event_id").map { $0.split(separator: ":").suffix(2).joined(separator: ":") }
            })
        }
    }

    struct Posted: CustomStringConvertible {
        var accepted: [Int] = []
        var spooled = 0
        var refused = 0
        var retryAfterOnEvery503 = true
        /// `/readyz`'s 503 bodies, each read after a batch that was refused.
        var readinessWhileRefused: [String] = []
        /// The least `tollgate_embedded_broker_headroom_bytes` read after a refused batch, and that reading's lines.
        var leastHeadroom = Double.infinity
        var headroom: [Substring] = []
        var description: String { "accepted=\(accepted.count) spooled=\(spooled) refused=\(refused) retryAfter=\(retryAfterOnEvery503)" }
    }

    /// Posts unique deliveries, four at a time, until ten in a row were answered 503, or for `duration`.
    static func postUntilRefused(_ base: String, fetcher: HTTPClientFetcher, for duration: Duration) async throws -> Posted {
        var posted = Posted()
        var refusedInARow = 0
        var next = 0
        let deadline = ContinuousClock.now + duration
        while refusedInARow < 10, ContinuousClock.now < deadline {
            let batch = next..<(next + 4)
            next += 4
            let answers = try await withThrowingTaskGroup(of: (Int, HTTPFetchResponse).self) { group in
                for index in batch {
                    group.addTask {
                        (index, try await fetcher.fetch(HTTPFetchRequest(url: base + "/webhooks/iaptic", method: "POST",
                                                                         headers: [("Content-Type", "application/json")],
                                                                         body: Array(delivery(index).utf8), timeout: .seconds(30))))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (index, answer) in answers.sorted(by: { $0.0 < $1.0 }) {
                switch answer.status {
                case 200:
                    posted.accepted.append(index)
                    refusedInARow = 0
                case 503:
                    posted.refused += 1
                    refusedInARow += 1
                    if answer.headers["Retry-After"] == nil { posted.retryAfterOnEvery503 = false }
                    #expect(String(decoding: answer.body, as: UTF8.self).contains("\"not_durable\""))
                default:
                    Issue.record("delivery \(index): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
                }
            }
            guard answers.contains(where: { $0.1.status == 503 }) else { continue }
            let ready = try await fetcher.fetch(HTTPFetchRequest(url: base + "/readyz", timeout: .seconds(5)))
            if ready.status == 503 { posted.readinessWhileRefused.append(String(decoding: ready.body, as: UTF8.self)) }
            let metrics = String(decoding: try await fetcher.fetch(HTTPFetchRequest(url: base + "/metrics", timeout: .seconds(5))).body,
                                 as: UTF8.self)
            let headroom = metrics.split(separator: "\n").filter { $0.hasPrefix("tollgate_embedded_broker_headroom_bytes{") }
            let least = headroom.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.min() ?? .infinity
            if least < posted.leastHeadroom { (posted.leastHeadroom, posted.headroom) = (least, headroom) }
        }
        return posted
    }

    /// The same purchases in every delivery (each delivery's events are new: their ids carry its
    /// notification's), all keyed to one partition by librdkafka's default partitioner (CRC-32 of the
    /// key, modulo the partitions), so that partition passes the limit soonest.
    static let purchaseIds: [String] = {
        var ids: [String] = []
        var candidate = 0
        while ids.count < purchasesPerDelivery {
            let id = "limit-\(candidate)"
            if crc32(Array(id.utf8)) % 3 == 0 { ids.append(id) }
            candidate += 1
        }
        return ids
    }()

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// An Iaptic `purchases.updated` callback for one user with `purchasesPerDelivery` subscriptions.
    static func delivery(_ index: Int) -> String {
        let purchases = purchaseIds.enumerated().map { product, id in
            #""p\#(product)":{"purchaseId":"\#(id)","transactionId":"\#(id)-\#(index)","productId":"p\#(product)","platform":"apple","#
                + #""purchaseDate":"2026-11-01T00:00:00.000Z","expirationDate":"2099-01-01T00:00:00.000Z","isExpired":false}"#
        }
        return #"{"type":"purchases.updated","password":"\#(secret)","applicationUsername":"user-\#(index)","#
            + #""notification":{"id":"ntf-\#(index)","reason":"RENEWED","date":"2026-11-27T00:00:00.000Z"},"#
            + #""purchases":{\#(purchases.joined(separator: ","))}}"#
    }
}
