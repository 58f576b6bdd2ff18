import StoreTestSupport
import Foundation
import Store
import Testing

/// Rows per second of a projection-like batched upsert: measured on demand, printed, not asserted
/// (the numbers depend on the machine and build). TOLLGATE_STORE_BENCH=1 turns it on.
@Suite("Throughput", .serialized, .enabled(if: ProcessInfo.processInfo.environment["TOLLGATE_STORE_BENCH"] != nil))
struct ThroughputTests {
    static let upsert = """
        INSERT INTO entitlements (subject, product, seq, active, expires_at) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (subject) DO UPDATE SET seq = excluded.seq, active = excluded.active, expires_at = excluded.expires_at
        WHERE entitlements.seq < excluded.seq
        """

    @Test("batched upserts per second", arguments: Backend.allCases)
    func batchedUpserts(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            try await db.migrate([Migration(version: 1, name: "entitlements") { dialect in
                let integer = dialect == .sqlite ? "INTEGER" : "BIGINT"
                return """
                    CREATE TABLE entitlements (subject TEXT PRIMARY KEY, product TEXT NOT NULL, seq \(integer) NOT NULL,
                                               active \(integer) NOT NULL, expires_at TEXT)
                    """
            }])
            let total = 40_000, batch = 500
            for pipelined in [false, true] {
                let started = ContinuousClock.now
                for first in stride(from: total * (pipelined ? 1 : 0), to: total * (pipelined ? 2 : 1), by: batch) {
                    // Half the events update a subject seen before.
                    let statements = (first..<(first + batch)).map { n in
                        SQLStatement(Self.upsert, [.text("user-\(n / 2)"), "pro.monthly", .int(Int64(n)), .bool(n % 3 != 0), "2026-12-01T00:00:00Z"])
                    }
                    try await db.transaction { connection throws(StoreError) in
                        if pipelined {
                            try connection.executeBatch(statements)
                        } else {
                            for statement in statements { try connection.execute(statement.sql, statement.params) }
                        }
                    }
                }
                let seconds = (ContinuousClock.now - started) / .seconds(1)
                print("\(backend), \(pipelined ? "executeBatch" : "execute each"): \(total) upserts in transactions of \(batch): \(Int(Double(total) / seconds)) rows/s")
            }
        }
    }
}
