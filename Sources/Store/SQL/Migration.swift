/// One schema change. `sql` may hold several statements and may differ by dialect; it runs in one
/// transaction together with the row recording it, so it cannot hold what a transaction refuses
/// (PostgreSQL's CREATE INDEX CONCURRENTLY; SQLite's PRAGMA foreign_keys has no effect there).
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    public let sql: @Sendable (SQLDialect) -> String

    public init(version: Int, name: String, sql: @escaping @Sendable (SQLDialect) -> String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}
