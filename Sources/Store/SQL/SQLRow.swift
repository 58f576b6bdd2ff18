/// One result row. Columns are looked up by name: exactly first, then ignoring case, because
/// PostgreSQL folds unquoted names to lower case where SQLite keeps them as written.
public struct SQLRow: Sendable {
    let columns: SQLColumns
    /// The values in column order.
    public let values: [SQLValue]

    init(columns: SQLColumns, values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    public var columnNames: [String] { columns.names }

    /// The column's value, `.null` when the row has no such column.
    public subscript(_ column: String) -> SQLValue {
        guard let position = columns.position(of: column) else { return .null }
        return values[position]
    }

    /// An integer column. Also an integral double, because PostgreSQL's SUM and numeric columns
    /// arrive as doubles.
    public func int(_ column: String) -> Int64? {
        switch self[column] {
        case .int(let value): return value
        case .double(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    public func text(_ column: String) -> String? {
        if case .text(let value) = self[column] { return value }
        return nil
    }

    public func blob(_ column: String) -> [UInt8]? {
        if case .blob(let value) = self[column] { return value }
        return nil
    }

    public func double(_ column: String) -> Double? {
        switch self[column] {
        case .double(let value): return value
        case .int(let value): return Double(value)
        default: return nil
        }
    }

    /// A boolean stored as an integer: 0 is false, anything else true.
    public func bool(_ column: String) -> Bool? {
        int(column).map { $0 != 0 }
    }
}

/// The column names of one result, shared by its rows.
final class SQLColumns: Sendable {
    let names: [String]
    private let exact: [String: Int]
    private let folded: [String: Int]

    init(_ names: [String]) {
        self.names = names
        var exact: [String: Int] = [:], folded: [String: Int] = [:]
        // The first of two equal names wins, as in `SELECT a.id, b.id`.
        for (position, name) in names.enumerated().reversed() {
            exact[name] = position
            folded[name.lowercased()] = position
        }
        self.exact = exact
        self.folded = folded
    }

    func position(of name: String) -> Int? {
        exact[name] ?? folded[name.lowercased()]
    }
}
