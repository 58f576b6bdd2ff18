import CPostgres
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a text-format PGresult into rows, by column type: integers and booleans (0/1) as `.int`,
/// floating and numeric as `.double`, everything else as `.text`.
enum PostgresRows {
    private enum Kind { case int, double, bool, text }

    static func decode(_ result: OpaquePointer) -> [SQLRow] {
        let fieldCount = PQnfields(result), rowCount = PQntuples(result)
        let columns = SQLColumns((0..<fieldCount).map { String(cString: PQfname(result, $0)) })
        let kinds = (0..<fieldCount).map { kind(of: PQftype(result, $0)) }
        var rows: [SQLRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(fieldCount))
            for field in 0..<fieldCount {
                guard PQgetisnull(result, row, field) == 0, let text = PQgetvalue(result, row, field) else {
                    values.append(.null)
                    continue
                }
                values.append(value(text, length: Int(PQgetlength(result, row, field)), kinds[Int(field)]))
            }
            rows.append(SQLRow(columns: columns, values: values))
        }
        return rows
    }

    private static func kind(of type: Oid) -> Kind {
        switch type {
        case PostgresType.int2, PostgresType.int4, PostgresType.int8: .int
        case PostgresType.float4, PostgresType.float8, PostgresType.numeric: .double
        case PostgresType.bool: .bool
        default: .text
        }
    }

    private static func value(_ text: UnsafeMutablePointer<CChar>, length: Int, _ kind: Kind) -> SQLValue {
        switch kind {
        case .int: return .int(Int64(strtoll(text, nil, 10)))
        case .bool: return .int(text.pointee == CChar(UInt8(ascii: "t")) ? 1 : 0)
        case .double:
            // Swift's parser reads "NaN", "Infinity" and "-Infinity" too, whatever the C locale.
            return .double(Double(String(cString: text)) ?? .nan)
        case .text:
            return .text(text.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            })
        }
    }
}
