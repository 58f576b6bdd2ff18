import CSQLite

extension StoreError {
    /// Maps an SQLite result code: busy, locked, I/O, cannot-open and disk-full are transient,
    /// constraint violations are `.constraint`, the rest `.invalid`.
    static func sqlite(_ code: Int32, _ db: OpaquePointer?, context: String? = nil) -> StoreError {
        let kind: Kind
        switch code & 0xff {
        case SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_FULL: kind = .unavailable
        case SQLITE_CONSTRAINT: kind = .constraint
        default: kind = .invalid
        }
        let detail = db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
        var message = "SQLite \(code) (\(String(cString: sqlite3_errstr(code)))): \(detail)"
        if let context { message += " in: \(context)" }
        return StoreError(kind, message)
    }
}

/// A statement's text for error messages, short enough for a log line.
func sqlExcerpt(_ sql: String) -> String {
    let flat = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    return flat.count > 200 ? flat.prefix(200) + "..." : flat
}
