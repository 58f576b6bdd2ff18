import CPostgres
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Parameters as libpq takes them: text values (NULL for SQL NULL) and type OIDs. Numbers are
/// typed so `SELECT $1` or `$1 IS NULL` resolve; text and NULL stay unknown (0) so the server
/// casts them to the column's type (timestamptz, jsonb, ...).
final class PostgresParameters {
    let types: [Oid]
    private let texts: [UnsafeMutablePointer<CChar>?]
    /// The values, valid while this object lives.
    let pointers: [UnsafePointer<CChar>?]

    init(_ params: [SQLValue]) {
        types = params.map { value in
            switch value {
            case .int: PostgresType.int8
            case .double: PostgresType.float8
            case .text, .null: 0
            }
        }
        texts = params.map { value in
            switch value {
            case .null: nil
            case .int(let number): strdup(String(number))
            case .double(let number): strdup(Self.text(number))
            case .text(let text): strdup(text)
            }
        }
        pointers = texts.map { UnsafePointer($0) }
    }

    var count: Int32 { Int32(types.count) }

    /// Shortest text that reads back as the same double, in PostgreSQL's spelling of the specials.
    private static func text(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        return "\(number)"
    }

    deinit { texts.forEach { free($0) } }
}
