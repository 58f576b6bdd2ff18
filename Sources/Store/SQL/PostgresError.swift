import CPostgres

extension StoreError {
    /// Maps a failed PostgreSQL command by its SQLSTATE. A lost connection, an unreachable or
    /// shutting-down server, exhausted resources, a serialization failure or deadlock (once retries
    /// are spent), a lock or statement timeout are transient; class 23 is `.constraint`.
    static func postgres(_ result: OpaquePointer?, _ connection: OpaquePointer) -> StoreError {
        let sqlState = result.flatMap { PQresultErrorField($0, PostgresField.sqlState) }.map { String(cString: $0) }
        let primary = result.flatMap { PQresultErrorField($0, PostgresField.primaryMessage) }.map { String(cString: $0) }
        let detail = result.flatMap { PQresultErrorField($0, PostgresField.detail) }.map { String(cString: $0) }
        var message = "PostgreSQL \(sqlState ?? "error"): "
        message += primary ?? trimmed(PQerrorMessage(connection))
        if let detail { message += " (\(detail))" }
        let lost = PQstatus(connection) == CONNECTION_BAD
        return StoreError(lost ? .unavailable : postgresKind(sqlState: sqlState), message)
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

/// libpq's diagnostic field codes (postgres_ext.h character macros, which Swift does not import).
enum PostgresField {
    static let sqlState = Int32(UInt8(ascii: "C"))
    static let primaryMessage = Int32(UInt8(ascii: "M"))
    static let detail = Int32(UInt8(ascii: "D"))
}

/// A libpq message without its trailing newline and tab-indented continuation lines folded in.
func trimmed(_ message: UnsafePointer<CChar>?) -> String {
    guard let message else { return "unknown error" }
    return String(cString: message).split(whereSeparator: \.isNewline)
        .map { $0.trimmingPrefix(while: \.isWhitespace) }.joined(separator: " ")
}
