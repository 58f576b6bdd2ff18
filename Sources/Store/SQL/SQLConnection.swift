/// A connection inside one transaction, used from one thread: the body of
/// `SQLDatabase.transaction` or `read`. Not Sendable; do not keep it past the body.
public protocol SQLConnection: AnyObject {
    var dialect: SQLDialect { get }
    /// Runs one statement and returns its rows. Placeholders are `$1`, `$2`, ... in both backends;
    /// one may appear several times, and every parameter must be used.
    func query(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> [SQLRow]
    /// Runs one statement and returns how many rows it inserted, updated or deleted.
    @discardableResult func execute(_ sql: String, _ params: [SQLValue]) throws(StoreError) -> Int
}

extension SQLConnection {
    public func query(_ sql: String) throws(StoreError) -> [SQLRow] { try query(sql, []) }
    @discardableResult public func execute(_ sql: String) throws(StoreError) -> Int { try execute(sql, []) }
}

/// What a backend's connection adds for the lanes that drive it.
protocol DriverConnection: SQLConnection {
    /// True once the server has dropped the connection; the lane then opens a new one.
    var isBroken: Bool { get }
    /// True when the current transaction hit a serialization failure or deadlock, so running it
    /// again may succeed.
    var hitRetryableConflict: Bool { get }
    func begin() throws(StoreError)
    /// Commits, or throws (after rolling back) when the transaction cannot commit.
    func commit() throws(StoreError)
    /// Rolls back an open transaction; a no-op otherwise.
    func rollback()
    /// Runs SQL that may hold several statements, without parameters (migrations).
    func executeScript(_ sql: String) throws(StoreError)
    func close()
}
