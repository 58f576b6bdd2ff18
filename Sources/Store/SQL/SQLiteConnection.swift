import CSQLite
import Foundation

/// One SQLite connection (a `sqlite3*`), used from its lane's queue only.
final class SQLiteConnection: DriverConnection {
    let dialect = SQLDialect.sqlite
    let isBroken = false
    let hitRetryableConflict = false
    private var db: OpaquePointer?
    /// The write lane begins with the write lock taken (BEGIN IMMEDIATE), so writers queue in
    /// SQLite's busy handler instead of failing on a lock upgrade; the read lane's deferred
    /// transactions read a WAL snapshot and never wait for the writer.
    private let role: LaneRole
    private var statements: [String: SQLiteStatement] = [:]
    /// The failure that dooms the current transaction. SQLite would carry on after a failed
    /// statement where PostgreSQL aborts the transaction; doing as PostgreSQL does keeps the
    /// backends alike (a body that swallows an error commits nothing on either).
    private var abortingError: StoreError?
    /// Between begin() and commit()/rollback(), even if SQLite rolled back on its own (disk full, I/O).
    private var inTransaction = false
    private static let statementCacheLimit = 256

    init(path: String, role: LaneRole, busyTimeoutMs: Int32 = DatabaseURL.defaultBusyTimeoutMs) throws(StoreError) {
        self.role = role
        let parent = URL(fileURLWithPath: path).deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.unavailable, "cannot create the directory \(parent.path) for the SQLite database: \(error)")
        }
        var handle: OpaquePointer?
        // NOMUTEX: each connection is used by one queue at a time, SQLite's own locking would be waste.
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let error = StoreError.sqlite(rc, handle, context: "opening \(path)")
            sqlite3_close_v2(handle)
            throw error
        }
        db = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMs)
        try executeScript("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
        if role == .write {
            // Persistent in the file: readers opened later find it in WAL mode too.
            let mode = try query("PRAGMA journal_mode = WAL", []).first?.values.first
            guard mode == .text("wal") else {
                throw StoreError(.invalid, "SQLite database \(path) cannot use WAL mode (journal_mode is \(String(describing: mode)))")
            }
        }
    }

    func query(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> [SQLRow] {
        do throws(StoreError) {
            return try rows(sql, params)
        } catch {
            throw aborting(error)
        }
    }

    @discardableResult
    func execute(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> Int {
        do throws(StoreError) {
            return try changes(sql, params)
        } catch {
            throw aborting(error)
        }
    }

    /// Marks the open transaction (if any) as failed by `error`.
    private func aborting(_ error: StoreError) -> StoreError {
        if inTransaction, abortingError == nil { abortingError = error }
        return error
    }

    private func rows(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> [SQLRow] {
        try checkNotAborted()
        let statement = try prepared(sql)
        defer { statement.reset() }
        try statement.bind(params, sql: sql)
        let columns = statement.resultColumns()
        var rows: [SQLRow] = []
        while true {
            let rc = sqlite3_step(statement.handle)
            if rc == SQLITE_ROW {
                rows.append(statement.row(columns))
            } else if rc == SQLITE_DONE {
                return rows
            } else {
                throw .sqlite(rc, db)
            }
        }
    }

    private func changes(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> Int {
        try checkNotAborted()
        let statement = try prepared(sql)
        defer { statement.reset() }
        try statement.bind(params, sql: sql)
        // sqlite3_changes keeps the count of the last INSERT/UPDATE/DELETE across other statements:
        // only trust it when this statement changed the running total.
        let before = sqlite3_total_changes64(db)
        while true {
            let rc = sqlite3_step(statement.handle)
            if rc == SQLITE_DONE { break }
            if rc != SQLITE_ROW { throw .sqlite(rc, db) }
        }
        return sqlite3_total_changes64(db) == before ? 0 : Int(sqlite3_changes64(db))
    }

    private func checkNotAborted() throws(StoreError) {
        if let abortingError {
            throw StoreError(.invalid, "current transaction is aborted, statements ignored until its end (after: \(abortingError.message))")
        }
    }

    private func prepared(_ sql: String) throws(StoreError) -> SQLiteStatement {
        if let cached = statements[sql] { return cached }
        guard let db else { throw StoreError(.invalid, "the SQLite connection is closed") }
        let compiled: Result<OpaquePointer, StoreError> = sql.withCString { text in
            var handle: OpaquePointer?
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(db, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, &tail)
            guard rc == SQLITE_OK else { return .failure(.sqlite(rc, db, context: sqlExcerpt(sql))) }
            guard let handle else { return .failure(StoreError(.invalid, "empty SQL statement")) }
            // prepare compiles the first statement only: refuse a second rather than drop it.
            var rest: OpaquePointer?
            if let tail, sqlite3_prepare_v2(db, tail, -1, &rest, nil) != SQLITE_OK || rest != nil {
                sqlite3_finalize(rest)
                sqlite3_finalize(handle)
                return .failure(StoreError(.invalid, "one statement per call: \(sqlExcerpt(sql))"))
            }
            return .success(handle)
        }
        let statement = try SQLiteStatement(handle: compiled.get(), sql: sql)
        if statements.count >= Self.statementCacheLimit { statements.removeAll() }
        statements[sql] = statement
        return statement
    }

    func begin() throws(StoreError) {
        abortingError = nil
        try executeScript(role == .write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        inTransaction = true
    }

    func commit() throws(StoreError) {
        if let abortingError {
            rollback()
            throw StoreError(abortingError.kind, "transaction rolled back: \(abortingError.message)")
        }
        do {
            try executeScript("COMMIT")
            inTransaction = false
        } catch {
            rollback()
            throw error
        }
    }

    func rollback() {
        inTransaction = false
        guard let db, sqlite3_get_autocommit(db) == 0 else { return }
        sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
    }

    func executeScript(_ sql: String) throws(StoreError) {
        guard let db else { throw StoreError(.invalid, "the SQLite connection is closed") }
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errorMessage)
        sqlite3_free(errorMessage)
        guard rc == SQLITE_OK else { throw .sqlite(rc, db, context: sqlExcerpt(sql)) }
    }

    func close() {
        statements.removeAll()
        // close_v2 also copes with statements still alive elsewhere: it closes once they are finalized.
        sqlite3_close_v2(db)
        db = nil
    }

    deinit { close() }
}
