import CSQLite

/// A prepared statement with what binding and reading it needs, computed once per SQL string.
final class SQLiteStatement {
    let handle: OpaquePointer
    /// For each SQLite parameter slot (1-based slot = array index + 1), the 0-based index into the
    /// caller's parameters: `$N` names map to N - 1.
    private let slots: [Int]
    /// How many distinct `$N` the statement uses; the caller must pass exactly that many.
    private let parameterCount: Int
    private var columns: SQLColumns?

    init(handle: OpaquePointer, sql: String) throws(StoreError) {
        self.handle = handle
        var slots: [Int] = []
        var highest = 0
        for slot in 0..<Int(sqlite3_bind_parameter_count(handle)) {
            let name = sqlite3_bind_parameter_name(handle, Int32(slot + 1)).map { String(cString: $0) }
            guard let name, name.hasPrefix("$"), let number = Int(name.dropFirst()), number >= 1 else {
                throw StoreError(.invalid, "placeholder \(name ?? "?") is not $1, $2, ...: \(sqlExcerpt(sql))")
            }
            slots.append(number - 1)
            highest = max(highest, number)
        }
        // PostgreSQL rejects a gap ($1 and $3 without $2): refuse it here too, so both backends agree.
        guard Set(slots).count == highest else {
            throw StoreError(.invalid, "placeholders skip a number (uses \(slots.map { "$\($0 + 1)" }.joined(separator: ", "))): \(sqlExcerpt(sql))")
        }
        self.slots = slots
        self.parameterCount = highest
    }

    func bind(_ params: [SQLValue], sql: String) throws(StoreError) {
        guard params.count == parameterCount else {
            throw StoreError(.invalid, "\(params.count) parameters for a statement that uses \(parameterCount): \(sqlExcerpt(sql))")
        }
        for (offset, index) in slots.enumerated() {
            let slot = Int32(offset + 1)
            let rc: Int32
            switch params[index] {
            case .null: rc = sqlite3_bind_null(handle, slot)
            case .int(let value): rc = sqlite3_bind_int64(handle, slot, value)
            case .double(let value): rc = sqlite3_bind_double(handle, slot, value)
            case .text(let value): rc = bindText(value, slot: slot)
            case .blob(let value): rc = bindBlob(value, slot: slot)
            case .textArray, .intArray:
                throw StoreError(.invalid, "array parameter $\(index + 1) on SQLite, which has no arrays: \(sqlExcerpt(sql))")
            }
            guard rc == SQLITE_OK else { throw .sqlite(rc, sqlite3_db_handle(handle), context: sqlExcerpt(sql)) }
        }
    }

    private func bindText(_ value: String, slot: Int32) -> Int32 {
        // SQLITE_TRANSIENT (a macro Swift cannot import): SQLite copies the bytes before returning.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        var value = value
        return value.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                // An empty buffer may have no address, which SQLite would bind as NULL.
                guard let start = chars.baseAddress else { return sqlite3_bind_text(handle, slot, "", 0, transient) }
                return sqlite3_bind_text(handle, slot, start, Int32(chars.count), transient)
            }
        }
    }

    private func bindBlob(_ value: [UInt8], slot: Int32) -> Int32 {
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        return value.withUnsafeBytes { bytes in
            // sqlite3_bind_blob binds NULL for a nil pointer: an empty blob gets zeroblob(0) instead.
            guard let start = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_zeroblob(handle, slot, 0) }
            return sqlite3_bind_blob(handle, slot, start, Int32(bytes.count), transient)
        }
    }

    /// The result's column names, rebuilt if a schema change altered them.
    func resultColumns() -> SQLColumns {
        let count = Int(sqlite3_column_count(handle))
        if let columns, columns.names.count == count { return columns }
        let names = (0..<count).map { column in
            sqlite3_column_name(handle, Int32(column)).map { String(cString: $0) } ?? "column\(column + 1)"
        }
        let built = SQLColumns(names)
        columns = built
        return built
    }

    /// The current row's values.
    func row(_ columns: SQLColumns) -> SQLRow {
        var values: [SQLValue] = []
        values.reserveCapacity(columns.names.count)
        for column in 0..<Int32(columns.names.count) {
            switch sqlite3_column_type(handle, column) {
            case SQLITE_NULL: values.append(.null)
            case SQLITE_INTEGER: values.append(.int(sqlite3_column_int64(handle, column)))
            case SQLITE_FLOAT: values.append(.double(sqlite3_column_double(handle, column)))
            case SQLITE_BLOB:
                // The pointer first, then its length, as SQLite asks.
                let start = sqlite3_column_blob(handle, column)
                let count = Int(sqlite3_column_bytes(handle, column))
                values.append(.blob(start.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []))
            default:
                let bytes = sqlite3_column_text(handle, column)
                let count = Int(sqlite3_column_bytes(handle, column))
                values.append(.text(bytes.map { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) } ?? ""))
            }
        }
        return SQLRow(columns: columns, values: values)
    }

    /// Ready for the next use: no current row, no bound values.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    deinit { sqlite3_finalize(handle) }
}
