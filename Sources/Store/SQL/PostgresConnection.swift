import CPostgres
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One PostgreSQL connection (a `PGconn*`), used from its lane's queue only. Statements are
/// prepared once per SQL string and parameter types, then run with text-format parameters.
final class PostgresConnection: DriverConnection {
    let dialect = SQLDialect.postgres
    let connection: OpaquePointer
    private var prepared: [PreparedStatement.Key: PreparedStatement] = [:]
    private static let preparedLimit = 256
    private var statementsNamed = 0
    /// The failure that aborted the current transaction, rethrown if the body swallowed it.
    private var abortingError: StoreError?
    private(set) var hitRetryableConflict = false

    init(url: String) throws(StoreError) {
        let pairs = PostgresConnectionInfo.defaults + [("dbname", url)]
        let keywords = pairs.map { strdup($0.0) }, values = pairs.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let connection = (keywords + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordArray in
            (values + [nil]).map { UnsafePointer($0) }.withUnsafeBufferPointer { valueArray in
                // expand_dbname = 1: "dbname" holds the whole URL.
                PQconnectdbParams(keywordArray.baseAddress, valueArray.baseAddress, 1)
            }
        }
        guard let connection else { throw StoreError(.unavailable, "cannot connect to PostgreSQL: out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = PostgresConnectionInfo.scrub(trimmed(PQerrorMessage(connection)), url)
            PQfinish(connection)
            throw StoreError(.unavailable, "cannot connect to PostgreSQL at \(redactingPassword(url)): \(reason)")
        }
        self.connection = connection
        // libpq prints notices (e.g. "relation already exists, skipping") to stderr by default.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    var isBroken: Bool { isAbandoned || PQstatus(connection) == CONNECTION_BAD }
    /// Set when the connection is in a state no statement should meet (answers left unread).
    private var isAbandoned = false

    /// Marks the connection broken, so the lane replaces it.
    func abandon() { isAbandoned = true }

    func query(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> [SQLRow] {
        let result = try run(sql, params)
        defer { PQclear(result) }
        return PostgresRows.decode(result)
    }

    @discardableResult
    func execute(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> Int {
        let result = try run(sql, params)
        defer { PQclear(result) }
        return Self.rowsChanged(result)
    }

    /// The count in the command tag ("UPDATE 2"), but 0 for a SELECT, whose tag counts rows read.
    static func rowsChanged(_ result: OpaquePointer) -> Int {
        guard let tag = PQcmdStatus(result), strncmp(tag, "SELECT", 6) != 0 else { return 0 }
        return PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
    }

    /// Runs one statement; the result is the caller's to clear.
    private func run(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> OpaquePointer {
        try checkNotAborted()
        let parameters = PostgresParameters(params)
        let statement = try preparedStatement(sql, parameters)
        let result: OpaquePointer?
        if let statement {
            result = PQexecPrepared(connection, statement.name, parameters.count, parameters.pointers, nil, nil, 0)
        } else {
            result = PQexecParams(connection, sql, parameters.count, parameters.types, parameters.pointers, nil, nil, 0)
        }
        try check(result)
        // `check` throws for a nil result.
        guard let result else { throw StoreError(.unavailable, "PostgreSQL returned no result") }
        return result
    }

    func checkNotAborted() throws(StoreError) {
        if let abortingError, PQtransactionStatus(connection) != PQTRANS_IDLE {
            throw StoreError(.invalid, "current transaction is aborted, statements ignored until its end (after: \(abortingError.message))")
        }
    }

    /// The server-side prepared statement for `sql` with these parameters' types, prepared on
    /// first use; nil once the cache is full (the statement then runs unnamed). Refuses a
    /// parameter count the statement does not use: PostgreSQL would accept extra typed ones.
    func preparedStatement(_ sql: String, _ parameters: PostgresParameters) throws(StoreError) -> PreparedStatement? {
        let key = PreparedStatement.Key(sql: sql, types: parameters.types)
        let statement: PreparedStatement?
        if let cached = prepared[key] {
            statement = cached
        } else if prepared.count < Self.preparedLimit {
            // Never reused, even when preparing failed halfway.
            statementsNamed += 1
            let name = "tollgate_\(statementsNamed)"
            let preparation = PQprepare(connection, name, sql, parameters.count, parameters.types)
            defer { PQclear(preparation) }
            try check(preparation)
            let fresh = PreparedStatement(name: name, parameterCount: PostgresPlaceholders.count(in: sql))
            prepared[key] = fresh
            statement = fresh
        } else {
            statement = nil
        }
        let used = statement.map(\.parameterCount) ?? PostgresPlaceholders.count(in: sql)
        guard used == Int(parameters.count) else {
            let uses = used.map { "uses \($0)" } ?? "skips a placeholder number"
            let error = StoreError(.invalid, "\(parameters.count) parameters for a statement that \(uses): \(sqlExcerpt(sql))")
            abortingError = error
            throw error
        }
        return statement
    }

    /// Throws the mapped error unless `result` is a success, remembering what aborted the transaction.
    func check(_ result: OpaquePointer?) throws(StoreError) {
        if let result {
            let status = PQresultStatus(result)
            if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        }
        let sqlState = result.flatMap { PQresultErrorField($0, PostgresField.sqlState) }.map { String(cString: $0) }
        if StoreError.isRetryableConflict(sqlState: sqlState) { hitRetryableConflict = true }
        let error = StoreError.postgres(result, connection)
        abortingError = error
        throw error
    }

    func begin() throws(StoreError) {
        hitRetryableConflict = false
        abortingError = nil
        try executeScript("BEGIN ISOLATION LEVEL READ COMMITTED")
    }

    func commit() throws(StoreError) {
        // COMMIT of an aborted transaction "succeeds" as a ROLLBACK: report what aborted it instead.
        if PQtransactionStatus(connection) == PQTRANS_INERROR || abortingError != nil {
            let cause = abortingError?.message ?? "an earlier statement failed"
            rollback()
            throw StoreError(abortingError?.kind ?? .invalid, "transaction rolled back: \(cause)")
        }
        do {
            try executeScript("COMMIT")
        } catch {
            rollback()
            throw error
        }
    }

    func rollback() {
        guard PQstatus(connection) == CONNECTION_OK, PQtransactionStatus(connection) != PQTRANS_IDLE else { return }
        PQclear(PQexec(connection, "ROLLBACK"))
    }

    func executeScript(_ sql: String) throws(StoreError) {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        try check(result)
    }

    /// Nothing to do here: PQfinish runs in deinit, once the lane lets go of the connection.
    func close() {}

    deinit { PQfinish(connection) }
}

/// A server-side prepared statement: its name and how many parameters it uses.
struct PreparedStatement {
    struct Key: Hashable {
        let sql: String
        let types: [Oid]
    }

    let name: String
    /// N for $1 ... $N, nil when the SQL skips a number (refused, as SQLite does).
    let parameterCount: Int?
}

/// Type OIDs from the server's pg_type catalog (not in libpq's headers).
enum PostgresType {
    static let bool: Oid = 16
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let float4: Oid = 700
    static let float8: Oid = 701
    static let numeric: Oid = 1700
}
