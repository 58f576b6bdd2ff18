/// One statement and its parameters, for `SQLConnection.executeBatch`.
public struct SQLStatement: Sendable, Equatable {
    public var sql: String
    public var params: [SQLValue]

    public init(_ sql: String, _ params: [SQLValue] = []) {
        self.sql = sql
        self.params = params
    }
}
