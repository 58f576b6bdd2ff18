import Dispatch
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

/// One PostgreSQL connection through postgres-nio, used from its lane's thread only.
///
/// postgres-nio is asynchronous; the store's `SQLConnection` is synchronous, so that one transaction
/// body serves SQLite and PostgreSQL alike. Each statement is therefore written to the connection's
/// event loop and the lane's own thread waits for the answer (`EventLoopFuture.wait()`). That thread is
/// a dedicated one (`ConnectionLane`), never an event loop or Swift concurrency thread, so the wait
/// blocks nothing else; `make bench-projection` measures the cost (docs/architecture-storage.md).
final class PostgresDriverConnection: DriverConnection {
    let dialect = SQLDialect.postgres
    private let connection: PostgresConnection
    private let logger: Logger
    /// Between begin() and commit()/rollback().
    private var inTransaction = false
    /// The failure that aborted the current transaction, rethrown if the body swallowed it.
    private var abortingError: StoreError?
    /// Set when the connection is in a state no statement should meet (lost, or answers unread).
    private var isAbandoned = false
    private(set) var hitRetryableConflict = false
    /// How many `$N` each SQL text uses, counted once (bounded: SQL built per call would grow it).
    private var placeholderCounts: [String: Int?] = [:]
    private static let placeholderCacheLimit = 512
    private static let nextID = Atomic<Int>(1)

    init(url: PostgresURL, redactedURL: String, logger: Logger) throws(StoreError) {
        self.logger = logger
        let configuration = try Self.configuration(url)
        let id = Self.nextID.add(1, ordering: .relaxed).oldValue
        let outcome = Self.waitFor(timeoutSeconds: url.connectTimeoutSeconds) {
            try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
        }
        switch outcome {
        case .success(let connection): self.connection = connection
        case .failure(let error):
            throw StoreError(.unavailable, "cannot connect to PostgreSQL at \(redactedURL): \(Self.describe(error))")
        }
    }

    deinit { connection.close().whenComplete { _ in } }

    var isBroken: Bool { isAbandoned || connection.isClosed }

    func query(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> [SQLRow] {
        let result = try run(sql, params)
        guard let first = result.rows.first else { return [] }
        let columns = SQLColumns(first.map(\.columnName))
        return result.rows.map { row in SQLRow(columns: columns, values: row.map(PostgresValues.value)) }
    }

    @discardableResult
    func execute(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> Int {
        let metadata = try run(sql, params).metadata
        // A SELECT's tag counts the rows read, not changed.
        return metadata.command == "SELECT" ? 0 : metadata.rows ?? 0
    }

    private func run(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> PostgresQueryResult {
        if let abortingError, inTransaction {
            throw StoreError(.invalid, "current transaction is aborted, statements ignored until its end (after: \(abortingError.message))")
        }
        let used = placeholderCount(sql)
        guard used == params.count else {
            let uses = used.map { "uses \($0)" } ?? "skips a placeholder number"
            let error = StoreError(.invalid, "\(params.count) parameters for a statement that \(uses): \(sqlExcerpt(sql))")
            if inTransaction { abortingError = error }
            throw error
        }
        var bindings = PostgresBindings(capacity: params.count)
        for value in params { PostgresValues.bind(value, into: &bindings) }
        return try send(PostgresQuery(unsafeSQL: sql, binds: bindings))
    }

    private func placeholderCount(_ sql: String) -> Int? {
        if let cached = placeholderCounts[sql] { return cached }
        let count = PostgresSQLText.placeholderCount(in: sql)
        if placeholderCounts.count >= Self.placeholderCacheLimit { placeholderCounts.removeAll(keepingCapacity: true) }
        placeholderCounts[sql] = count
        return count
    }

    /// One statement on the wire, its answer awaited on this thread.
    private func send(_ query: PostgresQuery) throws(StoreError) -> PostgresQueryResult {
        do {
            return try connection.query(query, logger: logger).wait()
        } catch {
            let mapped = StoreError.postgres(error, connectionLost: connection.isClosed)
            if let psql = error as? PSQLError {
                if StoreError.isRetryableConflict(sqlState: psql.serverInfo?[.sqlState]) { hitRetryableConflict = true }
                if psql.code != .server || psql.serverInfo?[.sqlState]?.hasPrefix("08") == true { isAbandoned = true }
            } else {
                isAbandoned = true
            }
            if inTransaction { abortingError = mapped }
            throw mapped
        }
    }

    func begin() throws(StoreError) {
        hitRetryableConflict = false
        abortingError = nil
        _ = try send("BEGIN ISOLATION LEVEL READ COMMITTED")
        inTransaction = true
    }

    func commit() throws(StoreError) {
        // COMMIT of an aborted transaction "succeeds" as a ROLLBACK: report what aborted it instead.
        if let abortingError {
            rollback()
            throw StoreError(abortingError.kind, "transaction rolled back: \(abortingError.message)")
        }
        do throws(StoreError) {
            _ = try send("COMMIT")
            inTransaction = false
        } catch {
            rollback()
            throw error
        }
    }

    func rollback() {
        guard inTransaction else { return }
        inTransaction = false
        guard !isBroken else { return }
        _ = try? send("ROLLBACK")
    }

    func executeScript(_ sql: String) throws(StoreError) {
        for statement in PostgresSQLText.statements(in: sql) {
            if let abortingError, inTransaction { throw abortingError }
            _ = try send(PostgresQuery(unsafeSQL: statement))
        }
    }

    func close() {
        try? connection.close().wait()
    }

    /// What postgres-nio connects with, for this URL.
    private static func configuration(_ url: PostgresURL) throws(StoreError) -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch url.endpoint {
        case .unixSocket(let path):
            configuration = .init(unixSocketPath: path, username: url.user, password: url.password, database: url.database)
        case .tcp(let host, let port):
            configuration = .init(host: host, port: port, username: url.user, password: url.password, database: url.database,
                                  tls: try tls(url))
        }
        if let seconds = url.connectTimeoutSeconds { configuration.options.connectTimeout = .seconds(Int64(seconds)) }
        configuration.options.additionalStartupParameters = [("application_name", url.applicationName), ("options", url.options)]
        return configuration
    }

    /// libpq's sslmode in postgres-nio's terms: `prefer` and `require` encrypt without checking the
    /// certificate (as libpq does), `verify-ca` checks the chain, `verify-full` the host name too.
    private static func tls(_ url: PostgresURL) throws(StoreError) -> PostgresConnection.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch url.sslMode {
        case .disable: return .disable
        case .allow, .prefer, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        if let file = url.sslRootCert { tls.trustRoots = .file(file) }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: tls)
        } catch {
            throw StoreError(.invalid, "PostgreSQL TLS settings (sslmode=\(url.sslMode.rawValue)) cannot be used: \(error)")
        }
        return url.sslMode == .require || url.sslMode == .verifyCA || url.sslMode == .verifyFull ? .require(context) : .prefer(context)
    }

    /// Runs `operation` on the concurrency pool and blocks this (lane) thread until it ends, cancelling
    /// it after `timeoutSeconds`: postgres-nio's connect timeout covers only the TCP connect, libpq's
    /// covered the whole set-up, and a server that accepts but never answers must not hold a lane.
    private static func waitFor<T: Sendable>(timeoutSeconds: Int?,
                                             _ operation: @escaping @Sendable () async throws -> T) -> Result<T, any Error> {
        let done = DispatchSemaphore(value: 0)
        let outcome = Outcome<T>()
        Task {
            let result: Result<T, any Error>
            do {
                result = .success(try await withThrowingTaskGroup(of: T?.self) { group in
                    group.addTask { try await operation() }
                    if let timeoutSeconds {
                        group.addTask {
                            try await Task.sleep(for: .seconds(timeoutSeconds))
                            return nil
                        }
                    }
                    defer { group.cancelAll() }
                    guard let first = try await group.next(), let value = first else { throw ConnectTimedOut(seconds: timeoutSeconds ?? 0) }
                    return value
                })
            } catch {
                result = .failure(error)
            }
            outcome.result.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.result.withLock { $0 } ?? .failure(ConnectTimedOut(seconds: timeoutSeconds ?? 0))
    }

    /// What the task hands the waiting thread.
    private final class Outcome<T: Sendable>: Sendable {
        let result = Mutex<Result<T, any Error>?>(nil)
    }

    private struct ConnectTimedOut: Error, CustomStringConvertible {
        let seconds: Int
        var description: String { "no answer within the connect_timeout of \(seconds) s" }
    }

    /// A postgres-nio error in words: its server fields or its code and cause. postgres-nio's own
    /// description is a fixed "Database error" (it keeps query text out of logs), so this reads its parts.
    static func describe(_ error: any Error) -> String {
        guard let psql = error as? PSQLError else { return "\(error)" }
        if let info = psql.serverInfo {
            var message = "PostgreSQL \(info[.sqlState] ?? "error"): \(info[.message] ?? "no message")"
            if let detail = info[.detail] { message += " (\(detail))" }
            return message
        }
        var message = "\(psql.code)"
        if let underlying = psql.underlying { message += ": \(underlying)" }
        return message
    }
}

extension StoreError {
    /// Maps a failed PostgreSQL command by its SQLSTATE. A lost connection, an unreachable or
    /// shutting-down server, exhausted resources, a serialization failure or deadlock (once retries
    /// are spent), a lock or statement timeout are transient; class 23 is `.constraint`.
    static func postgres(_ error: any Error, connectionLost: Bool) -> StoreError {
        let message = PostgresDriverConnection.describe(error)
        guard let psql = error as? PSQLError else { return StoreError(.unavailable, message) }
        switch psql.code {
        case .server: return StoreError(connectionLost ? .unavailable : postgresKind(sqlState: psql.serverInfo?[.sqlState]), message)
        // More than 65,535 parameters: our bug, not the network's.
        case .tooManyParameters: return StoreError(.invalid, message)
        default: return StoreError(.unavailable, message)
        }
    }

    static func postgresKind(sqlState: String?) -> Kind {
        guard let sqlState else { return .invalid }
        if isRetryableConflict(sqlState: sqlState) { return .unavailable }
        switch sqlState {
        case "57P01", "57P02", "57P03", "57014", "55P03": return .unavailable
        // A message the server could not accept (wrong parameter count): our bug, not the network's.
        case "08P01": return .invalid
        default: break
        }
        switch sqlState.prefix(2) {
        case "08", "53": return .unavailable
        case "23": return .constraint
        default: return .invalid
        }
    }

    /// Serialization failure or deadlock: the transaction may succeed when run again.
    static func isRetryableConflict(sqlState: String?) -> Bool {
        sqlState == "40001" || sqlState == "40P01"
    }
}
