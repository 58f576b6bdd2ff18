import Logging

/// The entitlement store's database: SQLite (one file, WAL) or PostgreSQL. Work runs in
/// transactions on the database's own threads: a write lane and a read lane, one connection each.
public final class SQLDatabase: Sendable {
    public let dialect: SQLDialect
    /// The URL with any password replaced by "***", for logs.
    public let redactedURL: String
    let writer: ConnectionLane
    private let reader: ConnectionLane
    let logger: Logger

    private init(dialect: SQLDialect, redactedURL: String, logger: Logger,
                 connect: @escaping @Sendable (LaneRole) throws(StoreError) -> any DriverConnection) {
        self.dialect = dialect
        self.redactedURL = redactedURL
        self.logger = logger
        writer = ConnectionLane(label: "tollgate.store.write", logger: logger) { () throws(StoreError) in try connect(.write) }
        reader = ConnectionLane(label: "tollgate.store.read", logger: logger) { () throws(StoreError) in try connect(.read) }
    }

    /// Opens "sqlite:<path>[?busy_timeout_ms=N]" (creating the parent directory; WAL, synchronous=FULL,
    /// busy timeout 5 s unless given, foreign keys on) or "postgres://..." / "postgresql://..." (read by
    /// `PostgresURL`, connected through postgres-nio, with connect_timeout=5, statement_timeout=30s and
    /// application_name=tollgate unless the URL says otherwise).
    /// The write connection opens now; the read connection on first use.
    public static func open(url: String, logger: Logger) async throws(StoreError) -> SQLDatabase {
        let database: SQLDatabase
        switch try DatabaseURL.parse(url) {
        case .sqlite(let path, let busyTimeoutMs):
            database = SQLDatabase(dialect: .sqlite, redactedURL: url, logger: logger) { role throws(StoreError) in
                try SQLiteConnection(path: path, role: role, busyTimeoutMs: busyTimeoutMs)
            }
        case .postgres(let postgres):
            let redacted = redactingPassword(url)
            database = SQLDatabase(dialect: .postgres, redactedURL: redacted, logger: logger) { _ throws(StoreError) in
                try PostgresDriverConnection(url: postgres, redactedURL: redacted, logger: logger)
            }
        }
        try await database.writer.perform { lane throws(StoreError) in _ = try lane.connected() }
        logger.info("database opened", metadata: ["url": "\(database.redactedURL)"])
        return database
    }

    /// Runs `body` in one transaction on the write lane (SQLite: BEGIN IMMEDIATE; PostgreSQL: READ
    /// COMMITTED): committed when it returns, rolled back when it throws (rethrowing its error).
    /// PostgreSQL serialization failures and deadlocks run `body` again, a few times.
    public func transaction<T: Sendable>(
        _ body: @escaping @Sendable (any SQLConnection) throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        try await writer.perform { lane throws(StoreError) in try lane.transaction { connection throws(StoreError) in try body(connection) } }
    }

    /// The same on the read lane, so API reads do not queue behind a long write batch. SQLite
    /// begins a deferred transaction there (a WAL snapshot, never waiting for the writer).
    public func read<T: Sendable>(
        _ body: @escaping @Sendable (any SQLConnection) throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        try await reader.perform { lane throws(StoreError) in try lane.transaction { connection throws(StoreError) in try body(connection) } }
    }

    /// Whether the database answers `SELECT 1` now, on the read lane (not behind a write batch).
    public func ping() async -> Bool {
        do {
            try await reader.perform { lane throws(StoreError) in
                try lane.onLiveConnection { connection throws(StoreError) in _ = try connection.query("SELECT 1", []) }
            }
            return true
        } catch {
            logger.debug("database ping failed", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Runs `sql` on the write connection outside any transaction (CREATE DATABASE, VACUUM): for
    /// tests and maintenance, not for the store's own work.
    public func executeOutsideTransaction(_ sql: String) async throws(StoreError) {
        try await writer.perform { lane throws(StoreError) in
            try lane.onLiveConnection { connection throws(StoreError) in try connection.executeScript(sql) }
        }
    }

    /// Closes both connections once their current work is done; later calls fail with `.invalid`.
    public func close() async {
        for lane in [writer, reader] {
            try? await lane.perform { lane throws(StoreError) in lane.shutDown() }
        }
    }
}
