import StoreTestSupport
import Foundation
import Store
import Synchronization
import Testing

@Suite("SQL driver, the same on SQLite and PostgreSQL")
struct SQLDriverTests {
    static let createValues = "CREATE TABLE vals (id INTEGER PRIMARY KEY, i BIGINT, t TEXT, d DOUBLE PRECISION)"

    @Test("values come back as stored: NULL, Int64 limits, unicode and empty text, doubles", arguments: Backend.allCases)
    func valueRoundTrip(_ backend: Backend) async throws {
        let rows: [[SQLValue]] = [
            [1, .null, .null, .null],
            [2, .int(.max), "héllo 🦊 ∑ 日本語 O'Brien \"quoted\"", 3.25],
            [3, .int(.min), "", -0.5],
            [4, 0, "line\nbreak\ttab", 1e300],
        ]
        try await TestDatabases.withDatabase(backend) { db in
            try await db.transaction { connection throws(StoreError) in
                try connection.execute(Self.createValues)
                for row in rows {
                    #expect(try connection.execute("INSERT INTO vals (id, i, t, d) VALUES ($1, $2, $3, $4)", row) == 1)
                }
            }
            let read = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT id, i, t, d FROM vals ORDER BY id")
            }
            #expect(read.map(\.values) == rows)
            #expect(read.first?.columnNames == ["id", "i", "t", "d"])
            #expect(read.dropFirst().first?.int("i") == .max)
            #expect(read.dropFirst().first?.text("t") == "héllo 🦊 ∑ 日本語 O'Brien \"quoted\"")
            #expect(read.first?["i"] == .null)
            #expect(read.first?["no_such_column"] == .null)
        }
    }

    @Test("aggregates, comparisons and booleans read as numbers on both", arguments: Backend.allCases)
    func computedValues(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            let row = try await db.transaction { connection throws(StoreError) in
                try connection.execute(Self.createValues)
                try connection.execute("INSERT INTO vals (id, i) VALUES (1, 40), (2, 2)")
                return try connection.query("SELECT COUNT(*) AS n, SUM(i) AS total, MAX(i) > 10 AS big, 1 = 0 AS never FROM vals").first
            }
            #expect(row?.int("n") == 2)
            #expect(row?.int("total") == 42)
            #expect(row?.bool("big") == true)
            #expect(row?.bool("never") == false)
            #expect(row?.int("N") == 2, "column names match regardless of case")
        }
    }

    @Test("$N placeholders: reused, out of order; a wrong count or a gap refused", arguments: Backend.allCases)
    func placeholders(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            let row = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT $2 AS label, $1 + $1 AS doubled, $1 AS same", [21, "x"]).first
            }
            #expect(row?["doubled"] == .int(42))
            #expect(row?["same"] == .int(21))
            #expect(row?["label"] == .text("x"))

            let tooMany = await storeError { () async throws(StoreError) in
                try await db.read { connection throws(StoreError) in try connection.query("SELECT $1 AS a", [1, 2]) }
            }
            #expect(tooMany?.kind == .invalid)
            let tooFew = await storeError { () async throws(StoreError) in
                try await db.read { connection throws(StoreError) in try connection.query("SELECT $1 AS a, $2 AS b", [1]) }
            }
            #expect(tooFew?.kind == .invalid)
            let gap = await storeError { () async throws(StoreError) in
                try await db.read { connection throws(StoreError) in try connection.query("SELECT $1 AS a, $3 AS c", [1, 2, 3]) }
            }
            #expect(gap?.kind == .invalid)
        }
    }

    @Test("a committed transaction stays, a throwing body rolls back and its error comes out", arguments: Backend.allCases)
    func commitAndRollback(_ backend: Backend) async throws {
        struct Marker: Error {}
        try await TestDatabases.withDatabase(backend) { db in
            try await db.transaction { connection throws(StoreError) in
                try connection.execute(Self.createValues)
                try connection.execute("INSERT INTO vals (id, t) VALUES (1, 'kept')")
            }
            let thrown = await storeError { () async throws(StoreError) in
                try await db.transaction { connection throws(StoreError) in
                    try connection.execute("INSERT INTO vals (id, t) VALUES (2, 'dropped')")
                    try connection.execute("UPDATE vals SET t = 'changed' WHERE id = 1")
                    throw StoreError(.unavailable, "the body gave up")
                }
            }
            #expect(thrown?.kind == .unavailable)
            #expect(thrown?.message == "the body gave up")
            let texts = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT t FROM vals ORDER BY id").compactMap { $0.text("t") }
            }
            #expect(texts == ["kept"])
        }
    }

    @Test("a unique violation is .constraint with the backend's code, and a swallowed one commits nothing",
          arguments: Backend.allCases)
    func uniqueViolation(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            try await db.transaction { connection throws(StoreError) in
                try connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE)")
                try connection.execute("INSERT INTO users (id, email) VALUES (1, 'a@example.com')")
            }
            let duplicate = await storeError { () async throws(StoreError) in
                try await db.transaction { connection throws(StoreError) in
                    try connection.execute("INSERT INTO users (id, email) VALUES ($1, $2)", [2, "a@example.com"])
                }
            }
            #expect(duplicate?.kind == .constraint)
            #expect(duplicate?.message.contains(backend == .sqlite ? "2067" : "23505") == true, "\(String(describing: duplicate))")

            // Both backends doom the transaction at the first failure, whatever the body does next.
            let swallowed = await storeError { () async throws(StoreError) in
                try await db.transaction { connection throws(StoreError) in
                    try connection.execute("INSERT INTO users (id, email) VALUES (3, 'b@example.com')")
                    _ = try? connection.execute("INSERT INTO users (id, email) VALUES (4, 'a@example.com')")
                }
            }
            #expect(swallowed?.kind == .constraint)
            let count = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT COUNT(*) AS n FROM users").first?.int("n")
            }
            #expect(count == 1)
        }
    }

    @Test("execute counts the rows a statement changed (none for DDL or SELECT), and takes one statement only", arguments: Backend.allCases)
    func rowsChanged(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            let counts = try await db.transaction { connection throws(StoreError) in
                [try connection.execute(Self.createValues),
                 try connection.execute("INSERT INTO vals (id, i) VALUES (1, 1), (2, 2), (3, 3)"),
                 try connection.execute("CREATE INDEX vals_i ON vals (i)"),
                 try connection.execute("UPDATE vals SET t = 'x' WHERE i >= $1", [2]),
                 try connection.execute("DELETE FROM vals WHERE id = $1", [99]),
                 try connection.execute("SELECT id FROM vals")]
            }
            #expect(counts == [0, 3, 0, 2, 0, 0])
            let twoStatements = await storeError { () async throws(StoreError) in
                try await db.transaction { connection throws(StoreError) in
                    try connection.execute("DELETE FROM vals; DELETE FROM vals")
                }
            }
            #expect(twoStatements?.kind == .invalid)
        }
    }

    @Test("blobs come back byte for byte: empty, zero bytes, not UTF-8", arguments: Backend.allCases)
    func blobRoundTrip(_ backend: Backend) async throws {
        let blobs: [[UInt8]] = [[], [0], [0xFF, 0xFE, 0x00, 0x80, 0xC3], Array(0...255), Array("text".utf8)]
        try await TestDatabases.withDatabase(backend) { db in
            let type = backend == .sqlite ? "BLOB" : "BYTEA"
            try await db.transaction { connection throws(StoreError) in
                try connection.execute("CREATE TABLE bytes (id INTEGER PRIMARY KEY, b \(type))")
                for (id, blob) in blobs.enumerated() {
                    try connection.execute("INSERT INTO bytes (id, b) VALUES ($1, $2)", [.int(Int64(id)), .blob(blob)])
                }
                try connection.execute("INSERT INTO bytes (id, b) VALUES ($1, $2)", [.int(99), SQLValue(nil as [UInt8]?)])
            }
            let read = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT b FROM bytes ORDER BY id")
            }
            #expect(read.map { $0.blob("b") } == blobs + [nil])
            #expect(read.last?["b"] == .null)
        }
    }

    @Test("read sees committed data and does not wait for a write transaction in progress", arguments: Backend.allCases)
    func readLane(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            try await db.transaction { connection throws(StoreError) in
                try connection.execute(Self.createValues)
                try connection.execute("INSERT INTO vals (id, t) VALUES (1, 'committed')")
            }
            let writing = Atomic<Int>(0)  // 1: inside the write transaction, 2: done
            let slowWrite = Task {
                try await db.transaction { connection throws(StoreError) in
                    try connection.execute("INSERT INTO vals (id, t) VALUES (2, 'uncommitted')")
                    writing.store(1, ordering: .sequentiallyConsistent)
                    Thread.sleep(forTimeInterval: 1.5)  // on the write lane's own thread, not the pool
                    writing.store(2, ordering: .sequentiallyConsistent)
                }
            }
            while writing.load(ordering: .sequentiallyConsistent) == 0 { try await Task.sleep(for: .milliseconds(10)) }
            let seen = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT t FROM vals ORDER BY id").compactMap { $0.text("t") }
            }
            #expect(writing.load(ordering: .sequentiallyConsistent) == 1, "the read waited for the write")
            #expect(seen == ["committed"])
            try await slowWrite.value
            let after = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT COUNT(*) AS n FROM vals").first?.int("n")
            }
            #expect(after == 2)
        }
    }

    @Test("ping answers, and a closed database refuses work", arguments: Backend.allCases)
    func pingAndClose(_ backend: Backend) async throws {
        try await TestDatabases.withURL(backend) { url in
            let db = try await SQLDatabase.open(url: url, logger: TestDatabases.logger)
            #expect(db.dialect == (backend == .sqlite ? .sqlite : .postgres))
            #expect(await db.ping())
            await db.close()
            #expect(await db.ping() == false)
            let closed = await storeError { () async throws(StoreError) in
                try await db.transaction { connection throws(StoreError) in try connection.query("SELECT 1 AS one") }
            }
            #expect(closed?.kind == .invalid)
        }
    }

    @Test("the SQLite file is in WAL mode with full sync, foreign keys and a busy timeout")
    func sqlitePragmas() async throws {
        try await TestDatabases.withDatabase(.sqlite) { db in
            let pragmas = try await db.read { connection throws(StoreError) in
                ["journal_mode", "synchronous", "foreign_keys", "busy_timeout"].map { name in
                    (try? connection.query("PRAGMA \(name)").first?.values.first) ?? .null
                }
            }
            #expect(pragmas == [.text("wal"), .int(2), .int(1), .int(5_000)])
        }
    }

    @Test("busy_timeout_ms in an SQLite URL sets both connections' busy timeout")
    func sqliteBusyTimeoutOption() async throws {
        try await TestDatabases.withURL(.sqlite) { url in
            let db = try await SQLDatabase.open(url: url + "?busy_timeout_ms=200", logger: TestDatabases.logger)
            let query = { @Sendable (connection: any SQLConnection) throws(StoreError) -> SQLValue in
                try connection.query("PRAGMA busy_timeout", []).first?.values.first ?? .null
            }
            let timeouts = [try await db.transaction(query), try await db.read(query)]
            await db.close()
            #expect(timeouts == [.int(200), .int(200)])
        }
    }

    @Test("SQLite refuses ?, :name and @name placeholders, so SQL written for it also runs on PostgreSQL")
    func sqliteForeignPlaceholders() async throws {
        try await TestDatabases.withDatabase(.sqlite) { db in
            let cases: [(String, [SQLValue])] = [("SELECT ? AS a", [1]), ("SELECT :a AS a", [1]), ("SELECT @a AS a", [1])]
            for (sql, params) in cases {
                let error = await storeError { () async throws(StoreError) in
                    try await db.read { connection throws(StoreError) in try connection.query(sql, params) }
                }
                #expect(error?.kind == .invalid, "\(sql)")
            }
        }
    }
}
