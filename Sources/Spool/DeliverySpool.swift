import Foundation
import Kafka
import Logging
import Store
import Synchronization

/// A delivery's records waiting in the spool for the relay.
public struct SpooledDelivery: Sendable {
    public let id: Int64
    public let messages: [KafkaMessage]
}

/// What `/readyz` and the metrics say about the spool.
public struct SpoolStats: Sendable, Equatable {
    public var records: Int
    public var bytes: Int
    public var maxBytes: Int
    /// Milliseconds since 1970 at which the oldest waiting delivery was spooled.
    public var oldestSpooledAtMs: Int64?

    public func oldestAgeSeconds(nowMs: Int64 = DeliverySpool.nowMs()) -> Double {
        oldestSpooledAtMs.map { max(0, Double(nowMs - $0) / 1_000) } ?? 0
    }
}

/// Deliveries Kafka did not acknowledge in time, kept on local disk until the relay publishes them:
/// an SQLite file in WAL mode with `synchronous=FULL`, so a row is on disk (fsynced) before the
/// sender gets its 2xx. Concurrent appends share one transaction (group commit): one fsync for
/// every delivery that arrived while the previous one was being written. A row is one delivery:
/// its records in `SpoolEncoding`'s layout, stored as a BLOB (bodies, keys and header values byte
/// for byte), and `bytes`, that BLOB's size, which `maxBytes` bounds.
public final class DeliverySpool: Sendable {
    public let path: String
    public let maxBytes: Int
    private let database: SQLDatabase
    private let lock: SpoolLock
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        var stats: SpoolStats
        var queue: [Pending] = []
        var writing = false
        var closed = false
    }

    private struct Pending {
        let row: [UInt8]
        let bytes: Int
        let spooledAtMs: Int64
        let done: CheckedContinuation<SpoolError?, Never>
    }

    private init(path: String, maxBytes: Int, database: SQLDatabase, lock: SpoolLock, stats: SpoolStats, logger: Logger) {
        self.path = path
        self.maxBytes = maxBytes
        self.database = database
        self.lock = lock
        self.logger = logger
        state = Mutex(State(stats: stats))
    }

    /// Opens (creating) the spool file and locks it for this process.
    public static func open(path: String, maxBytes: Int, logger: Logger) async throws(SpoolError) -> DeliverySpool {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let lock = try SpoolLock(path: path)
        do {
            let database = try await SQLDatabase.open(url: "sqlite:" + path, logger: logger)
            try await database.migrate(schema)
            try await upgradeTextRows(database, path: path, logger: logger)
            let stats = try await database.read { connection throws(StoreError) in
                let row = try connection.query("SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b, MIN(spooled_at) AS t FROM spool").first
                return SpoolStats(records: Int(row?.int("n") ?? 0), bytes: Int(row?.int("b") ?? 0), maxBytes: maxBytes,
                                  oldestSpooledAtMs: row?.int("t"))
            }
            if stats.records > 0 {
                logger.notice("spool holds deliveries from before the restart; the relay will publish them",
                              metadata: ["records": "\(stats.records)", "bytes": "\(stats.bytes)", "spool": "\(path)"])
            }
            return DeliverySpool(path: path, maxBytes: maxBytes, database: database, lock: lock, stats: stats, logger: logger)
        } catch {
            lock.release()
            throw SpoolError(.unavailable, "cannot open the spool \(path): \(error.message)")
        }
    }

    /// Never edit a released migration: add one.
    private static let schema = [
        // Versions up to 0.x: records as base64 text.
        Migration(version: 1, name: "spool") { _ in
            """
            CREATE TABLE spool (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                spooled_at INTEGER NOT NULL,
                bytes INTEGER NOT NULL,
                records TEXT NOT NULL
            );
            CREATE TABLE spool_damaged (
                id INTEGER PRIMARY KEY,
                spooled_at INTEGER NOT NULL,
                bytes INTEGER NOT NULL,
                records TEXT NOT NULL
            );
            """
        },
        // Records as BLOBs. The rows move over as they are (SQLite keeps a text value in a BLOB column
        // as text); `upgradeTextRows` then decodes them, which SQL cannot do.
        Migration(version: 2, name: "spool records as blobs") { _ in
            """
            CREATE TABLE spool_v2 (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                spooled_at INTEGER NOT NULL,
                bytes INTEGER NOT NULL,
                records BLOB NOT NULL
            );
            INSERT INTO spool_v2 (id, spooled_at, bytes, records) SELECT id, spooled_at, bytes, records FROM spool;
            DROP TABLE spool;
            ALTER TABLE spool_v2 RENAME TO spool;
            CREATE TABLE spool_damaged_v2 (
                id INTEGER PRIMARY KEY,
                spooled_at INTEGER NOT NULL,
                bytes INTEGER NOT NULL,
                records BLOB NOT NULL
            );
            INSERT INTO spool_damaged_v2 SELECT * FROM spool_damaged;
            DROP TABLE spool_damaged;
            ALTER TABLE spool_damaged_v2 RENAME TO spool_damaged;
            """
        },
    ]

    /// Rewrites the rows an older tollgate wrote (base64 text) as BLOBs, in one transaction, so a
    /// spool left by the previous version is relayed after the upgrade. A row that is not base64 stays
    /// as it is: `oldest` then moves it to `spool_damaged`, as any row that does not decode.
    private static func upgradeTextRows(_ database: SQLDatabase, path: String, logger: Logger) async throws(StoreError) {
        let upgraded = try await database.transaction { connection throws(StoreError) in
            var upgraded = 0
            for row in try connection.query("SELECT id, records FROM spool WHERE typeof(records) = 'text' ORDER BY id") {
                guard let id = row.int("id"), let text = row.text("records"), let data = Data(base64Encoded: text) else { continue }
                try connection.execute("UPDATE spool SET records = $1, bytes = $2 WHERE id = $3",
                                       [.blob(Array(data)), .int(Int64(data.count)), .int(id)])
                upgraded += 1
            }
            return upgraded
        }
        if upgraded > 0 {
            logger.notice("spool rows from the previous version rewritten as blobs", metadata: ["rows": "\(upgraded)", "spool": "\(path)"])
        }
    }

    public var stats: SpoolStats { state.withLock { $0.stats } }

    /// True when no delivery waits or is being written. When false, new deliveries must queue behind
    /// the waiting ones to keep order.
    public var isEmpty: Bool { state.withLock { $0.stats.records == 0 } }

    /// Writes one delivery's records and returns once they are on disk.
    public func append(_ messages: [KafkaMessage]) async throws(SpoolError) {
        let row = SpoolEncoding.encode(messages)
        let bytes = row.count
        let now = Self.nowMs()
        let failure: SpoolError? = await withCheckedContinuation { continuation in
            enum Next { case refuse(SpoolError), wait, write }
            let next: Next = state.withLock { state in
                if state.closed { return .refuse(SpoolError(.unavailable, "the spool is closed")) }
                if state.stats.bytes + bytes > maxBytes {
                    return .refuse(SpoolError(.full, "the spool is full (\(state.stats.bytes) of \(maxBytes) bytes)"))
                }
                state.stats.bytes += bytes
                state.stats.records += 1
                if state.stats.oldestSpooledAtMs == nil { state.stats.oldestSpooledAtMs = now }
                state.queue.append(Pending(row: row, bytes: bytes, spooledAtMs: now, done: continuation))
                if state.writing { return .wait }
                state.writing = true
                return .write
            }
            switch next {
            case .refuse(let error): continuation.resume(returning: error)
            case .wait: break
            case .write: Task { await self.writeQueued() }
            }
        }
        if let failure { throw failure }
    }

    /// Writes whatever queued meanwhile in one transaction, until nothing is left.
    private func writeQueued() async {
        while true {
            let batch: [Pending] = state.withLock { state in
                let batch = state.queue
                state.queue = []
                if batch.isEmpty { state.writing = false }
                return batch
            }
            if batch.isEmpty { return }
            let rows = batch.map { ($0.row, $0.bytes, $0.spooledAtMs) }
            var failure: SpoolError?
            do {
                try await database.transaction { connection throws(StoreError) in
                    for (row, bytes, at) in rows {
                        try connection.execute("INSERT INTO spool (spooled_at, bytes, records) VALUES ($1, $2, $3)",
                                               [.int(at), .int(Int64(bytes)), .blob(row)])
                    }
                }
            } catch {
                logger.error("spool write failed", metadata: ["error": "\(error)", "deliveries": "\(batch.count)"])
                failure = SpoolError(.unavailable, "the spool could not be written: \(error.message)")
                state.withLock { state in
                    state.stats.bytes -= batch.reduce(0) { $0 + $1.bytes }
                    state.stats.records -= batch.count
                    if state.stats.records == 0 { state.stats.oldestSpooledAtMs = nil }
                }
            }
            for pending in batch { pending.done.resume(returning: failure) }
        }
    }

    /// The oldest waiting deliveries, in the order they were spooled. A row that no longer decodes
    /// (a damaged disk) is logged and skipped, never dropped.
    public func oldest(limit: Int) async throws(SpoolError) -> [SpooledDelivery] {
        let rows: [SQLRow]
        do {
            rows = try await database.read { connection throws(StoreError) in
                try connection.query("SELECT id, records FROM spool ORDER BY id LIMIT $1", [.int(Int64(limit))])
            }
        } catch {
            throw SpoolError(.unavailable, "the spool could not be read: \(error.message)")
        }
        var deliveries: [SpooledDelivery] = []
        var damaged: [Int64] = []
        for row in rows {
            guard let id = row.int("id") else { continue }
            guard let bytes = row.blob("records"), let messages = SpoolEncoding.decode(bytes) else {
                logger.critical("a spooled delivery cannot be decoded; it is moved to the spool_damaged table for inspection",
                                metadata: ["id": "\(id)", "spool": "\(path)"])
                damaged.append(id)
                continue
            }
            deliveries.append(SpooledDelivery(id: id, messages: messages))
        }
        if !damaged.isEmpty { try await settle(published: [], setAside: damaged) }
        return deliveries
    }

    /// Forgets deliveries the relay published (each record acknowledged), and keeps `remaining` in
    /// place of the others' records: what the relay still has to publish for them.
    public func settle(published: [Int64], remaining: [Int64: [KafkaMessage]] = [:]) async throws(SpoolError) {
        try await settle(published: published, remaining: remaining, setAside: [])
    }

    /// `setAside`: rows that no longer decode (a damaged disk), moved out of the relay's way but kept.
    private func settle(published: [Int64], remaining: [Int64: [KafkaMessage]] = [:], setAside: [Int64]) async throws(SpoolError) {
        guard !published.isEmpty || !remaining.isEmpty || !setAside.isEmpty else { return }
        let updates = remaining.map { ($0.key, SpoolEncoding.encode($0.value)) }
        let result: (removedRecords: Int, bytesDelta: Int, oldest: Int64?)
        do {
            result = try await database.transaction { connection throws(StoreError) in
                var bytesDelta = 0
                var removed = 0
                for id in setAside {
                    try connection.execute("INSERT INTO spool_damaged SELECT * FROM spool WHERE id = $1", [.int(id)])
                }
                for id in published + setAside {
                    let rows = try connection.query("DELETE FROM spool WHERE id = $1 RETURNING bytes", [.int(id)])
                    if let bytes = rows.first?.int("bytes") {
                        bytesDelta -= Int(bytes)
                        removed += 1
                    }
                }
                for (id, row) in updates {
                    let rows = try connection.query("SELECT bytes FROM spool WHERE id = $1", [.int(id)])
                    guard let old = rows.first?.int("bytes") else { continue }
                    try connection.execute("UPDATE spool SET records = $1, bytes = $2 WHERE id = $3",
                                           [.blob(row), .int(Int64(row.count)), .int(id)])
                    bytesDelta += row.count - Int(old)
                }
                let oldest = try connection.query("SELECT MIN(spooled_at) AS t FROM spool").first?.int("t")
                return (removed, bytesDelta, oldest)
            }
        } catch {
            throw SpoolError(.unavailable, "the spool could not be updated: \(error.message)")
        }
        state.withLock { state in
            state.stats.records -= result.removedRecords
            state.stats.bytes += result.bytesDelta
            // Appends still being written are not in the table yet; they are younger than anything there.
            state.stats.oldestSpooledAtMs = result.oldest ?? (state.stats.records > 0 ? state.stats.oldestSpooledAtMs : nil)
        }
    }

    /// Refuses new deliveries, waits for the ones being written, closes the file and its lock.
    public func close() async {
        state.withLock { $0.closed = true }
        while state.withLock({ $0.writing }) { try? await Task.sleep(for: .milliseconds(5)) }
        await database.close()
        lock.release()
    }

    public static func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1_000).rounded()) }
}
