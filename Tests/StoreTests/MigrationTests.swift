import StoreTestSupport
import Store
import Testing

@Suite("Schema migrations on SQLite and PostgreSQL")
struct MigrationTests {
    /// Migrations that fail if run twice (CREATE TABLE without IF NOT EXISTS), several statements each.
    static func tables(_ versions: ClosedRange<Int>) -> [Migration] {
        versions.map { version in
            Migration(version: version, name: "table \(version)") { dialect in
                let type = dialect == .sqlite ? "INTEGER" : "BIGINT"
                return "CREATE TABLE t\(version) (id \(type) PRIMARY KEY);\nINSERT INTO t\(version) (id) VALUES (\(version));"
            }
        }
    }

    static func recorded(_ db: SQLDatabase) async throws(StoreError) -> [SQLRow] {
        try await db.read { connection throws(StoreError) in
            try connection.query("SELECT version, name, applied_at FROM tollgate_schema_migrations ORDER BY version")
        }
    }

    @Test("applied once in version order, nothing on a re-run, a later migration alone", arguments: Backend.allCases)
    func appliedOnce(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            #expect(try await db.migrate(Self.tables(1...3).reversed()) == [1, 2, 3])
            #expect(try await db.migrate(Self.tables(1...3)) == [])
            #expect(try await db.migrate(Self.tables(1...4)) == [4])
            let rows = try await Self.recorded(db)
            #expect(rows.compactMap { $0.int("version") } == [1, 2, 3, 4])
            #expect(rows.compactMap { $0.text("name") } == ["table 1", "table 2", "table 3", "table 4"])
            #expect(rows.allSatisfy { $0["applied_at"] != .null })
            let total = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT (SELECT id FROM t1) + (SELECT id FROM t4) AS total").first?.int("total")
            }
            #expect(total == 5)
        }
    }

    @Test("two databases migrating at once apply each version exactly once", arguments: Backend.allCases)
    func concurrentMigrators(_ backend: Backend) async throws {
        try await TestDatabases.withURL(backend) { url in
            let first = try await SQLDatabase.open(url: url, logger: TestDatabases.logger)
            let second = try await SQLDatabase.open(url: url, logger: TestDatabases.logger)
            let migrations = Self.tables(1...8)
            async let a = first.migrate(migrations)
            async let b = second.migrate(migrations)
            let (appliedByFirst, appliedBySecond) = try await (a, b)
            #expect(Set(appliedByFirst).isDisjoint(with: appliedBySecond))
            #expect((appliedByFirst + appliedBySecond).sorted() == Array(1...8))
            #expect(try await Self.recorded(first).count == 8)
            await first.close()
            await second.close()
        }
    }

    @Test("a database with a newer schema is refused", arguments: Backend.allCases)
    func newerSchemaRefused(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            try await db.migrate(Self.tables(1...3))
            let refused = await storeError { () async throws(StoreError) in try await db.migrate(Self.tables(1...2)) }
            #expect(refused?.kind == .invalid)
            #expect(refused?.message == "schema version 3 is newer than this tollgate (2): upgrade tollgate")
        }
    }

    @Test("a failing migration rolls back all its statements and is not recorded", arguments: Backend.allCases)
    func failingMigration(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            let broken = Migration(version: 2, name: "broken") { _ in "CREATE TABLE half (id INTEGER); SELEC 1;" }
            let failure = await storeError { () async throws(StoreError) in try await db.migrate(Self.tables(1...1) + [broken]) }
            #expect(failure?.kind == .invalid)
            #expect(failure?.message.hasPrefix("migration 2 (broken): ") == true, "\(String(describing: failure))")
            let versions = try await Self.recorded(db).compactMap { $0.int("version") }
            #expect(versions == [1])
            let half = await storeError { () async throws(StoreError) in
                try await db.read { connection throws(StoreError) in try connection.query("SELECT id FROM half") }
            }
            #expect(half?.kind == .invalid, "the first statement of the failed migration was kept")
        }
    }

    @Test("duplicate or non-positive versions are refused before anything runs", arguments: Backend.allCases)
    func badMigrationLists(_ backend: Backend) async throws {
        try await TestDatabases.withDatabase(backend) { db in
            let duplicate = await storeError { () async throws(StoreError) in
                try await db.migrate(Self.tables(1...2) + Self.tables(2...2))
            }
            #expect(duplicate?.kind == .invalid)
            let zero = await storeError { () async throws(StoreError) in
                try await db.migrate([Migration(version: 0, name: "zero") { _ in "SELECT 1" }])
            }
            #expect(zero?.kind == .invalid)
        }
    }
}
