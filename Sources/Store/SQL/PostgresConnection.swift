import CPostgres
import Glibc

/// One PostgreSQL connection (a `PGconn*`), used from its lane's queue only. Statements are
/// prepared once per SQL string and parameter types, then run with text-format parameters.
final class PostgresConnection: DriverConnection {
    let dialect = SQLDialect.postgres
    private let connection: OpaquePointer
    /// Server-side prepared statements by parameter types and SQL: name and how many parameters they take.
    private var prepared: [String: (name: String, parameterCount: Int)] = [:]
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

    var isBroken: Bool { PQstatus(connection) == CONNECTION_BAD }

    func query(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> [SQLRow] {
        let result = try run(sql, params)
        defer { PQclear(result) }
        return PostgresRows.decode(result)
    }

    @discardableResult
    func execute(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> Int {
        let result = try run(sql, params)
        defer { PQclear(result) }
        return PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
    }

    /// Runs one statement; the result is the caller's to clear.
    private func run(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> OpaquePointer {
        if let abortingError, PQtransactionStatus(connection) != PQTRANS_IDLE {
            throw StoreError(.invalid, "current transaction is aborted, statements ignored until its end (after: \(abortingError.message))")
        }
        // Numbers are typed so `SELECT $1` or `$1 IS NULL` resolve; text and NULL stay unknown so the
        // server casts them to the column's type (timestamptz, jsonb, ...).
        let types: [Oid] = params.map { value in
            switch value {
            case .int: PostgresType.int8
            case .double: PostgresType.float8
            case .text, .null: 0
            }
        }
        let texts: [UnsafeMutablePointer<CChar>?] = params.map { value in
            switch value {
            case .null: nil
            case .int(let number): strdup(String(number))
            case .double(let number): strdup(Self.text(number))
            case .text(let text): strdup(text)
            }
        }
        defer { texts.forEach { free($0) } }
        let pointers = texts.map { UnsafePointer($0) }
        let statement = try preparedStatement(sql, types)
        // PostgreSQL accepts extra parameters whose types are given: refuse them as SQLite does.
        let used = statement?.parameterCount ?? PostgresPlaceholders.highest(in: sql)
        guard used == params.count else {
            let error = StoreError(.invalid, "\(params.count) parameters for a statement that uses \(used): \(sqlExcerpt(sql))")
            abortingError = error
            throw error
        }
        let result: OpaquePointer?
        if let statement {
            result = PQexecPrepared(connection, statement.name, Int32(params.count), pointers, nil, nil, 0)
        } else {
            result = PQexecParams(connection, sql, Int32(params.count), types, pointers, nil, nil, 0)
        }
        try check(result)
        // `check` throws for a nil result.
        guard let result else { throw StoreError(.unavailable, "PostgreSQL returned no result") }
        return result
    }

    /// The server-side prepared statement for `sql` with these parameter types, prepared on first
    /// use; nil once the cache is full (the statement then runs unnamed).
    private func preparedStatement(_ sql: String, _ types: [Oid]) throws(StoreError) -> (name: String, parameterCount: Int)? {
        let key = types.map { String($0) }.joined(separator: ",") + "|" + sql
        if let statement = prepared[key] { return statement }
        guard prepared.count < Self.preparedLimit else { return nil }
        // Never reused, even when preparing failed halfway.
        statementsNamed += 1
        let name = "tollgate_\(statementsNamed)"
        let preparation = PQprepare(connection, name, sql, Int32(types.count), types)
        defer { PQclear(preparation) }
        try check(preparation)
        let statement = (name: name, parameterCount: PostgresPlaceholders.highest(in: sql))
        prepared[key] = statement
        return statement
    }

    /// Throws the mapped error unless `result` is a success, remembering what aborted the transaction.
    private func check(_ result: OpaquePointer?) throws(StoreError) {
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

    /// Shortest text that reads back as the same double, in PostgreSQL's spelling of the specials.
    private static func text(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        return "\(number)"
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

    func close() {}

    deinit { PQfinish(connection) }
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
