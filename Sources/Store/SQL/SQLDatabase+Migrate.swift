import Logging

extension SQLDatabase {
    /// Applies the pending migrations in version order, each in its own transaction together with
    /// its row in `tollgate_schema_migrations(version, name, applied_at)`, and returns the versions
    /// it applied. PostgreSQL takes an advisory lock first (SQLite's BEGIN IMMEDIATE serializes
    /// alone), so replicas starting together apply each version once. A database whose schema is
    /// newer than the newest migration given is refused.
    @discardableResult
    public func migrate(_ migrations: [Migration]) async throws(StoreError) -> [Int] {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (earlier, later) in zip(sorted, sorted.dropFirst()) where earlier.version == later.version {
            throw StoreError(.invalid, "two migrations have version \(later.version): \(earlier.name), \(later.name)")
        }
        if let first = sorted.first, first.version < 1 {
            throw StoreError(.invalid, "migration \(first.name) has version \(first.version): versions start at 1")
        }
        let newest = sorted.last?.version ?? 0
        let dialect = self.dialect
        let applied: Set<Int> = try await writer.perform { lane throws(StoreError) in
            try lane.transaction { connection throws(StoreError) in
                try Self.lockMigrations(connection)
                try connection.executeScript(Self.migrationsTableSQL(dialect))
                let rows = try connection.query("SELECT version FROM tollgate_schema_migrations", [])
                return Set(rows.compactMap { $0.int("version").map { Int($0) } })
            }
        }
        if let recorded = applied.max(), recorded > newest {
            throw StoreError(.invalid, "schema version \(recorded) is newer than this tollgate (\(newest)): upgrade tollgate")
        }
        var done: [Int] = []
        for migration in sorted where !applied.contains(migration.version) {
            let didApply = try await writer.perform { lane throws(StoreError) in
                try lane.transaction { connection throws(StoreError) in try Self.apply(migration, on: connection) }
            }
            if didApply {
                logger.info("applied migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
                done.append(migration.version)
            }
        }
        return done
    }

    /// Applies `migration` unless another process did since we looked; true if this call did.
    private static func apply(_ migration: Migration, on connection: any DriverConnection) throws(StoreError) -> Bool {
        try lockMigrations(connection)
        let version = SQLValue.int(Int64(migration.version))
        guard try connection.query("SELECT 1 FROM tollgate_schema_migrations WHERE version = $1", [version]).isEmpty else {
            return false
        }
        do throws(StoreError) {
            try connection.executeScript(migration.sql(connection.dialect))
        } catch {
            throw StoreError(error.kind, "migration \(migration.version) (\(migration.name)): \(error.message)")
        }
        try connection.execute("INSERT INTO tollgate_schema_migrations (version, name) VALUES ($1, $2)",
                               [version, .text(migration.name)])
        return true
    }

    /// PostgreSQL: one migrator at a time across processes, until this transaction ends.
    private static func lockMigrations(_ connection: any DriverConnection) throws(StoreError) {
        guard connection.dialect == .postgres else { return }
        _ = try connection.query("SELECT pg_advisory_xact_lock($1)", [.int(migrationLockKey)])
    }

    /// "tollgate" in ASCII: the advisory lock key of the migrations.
    private static let migrationLockKey: Int64 = 0x746F_6C6C_6761_7465

    private static func migrationsTableSQL(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite:
            """
            CREATE TABLE IF NOT EXISTS tollgate_schema_migrations (
                version INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
            )
            """
        case .postgres:
            """
            CREATE TABLE IF NOT EXISTS tollgate_schema_migrations (
                version BIGINT PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            )
            """
        }
    }
}
