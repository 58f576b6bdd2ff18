/// What the PostgreSQL driver needs to know of SQL text, found by one scan that skips string
/// literals, quoted identifiers, dollar-quoted bodies and comments:
/// - the `$N` placeholders: PostgreSQL accepts parameters a statement never uses when their types
///   are given, so the driver counts them to refuse those as SQLite does;
/// - where statements end: postgres-nio speaks only the extended protocol, one statement per query,
///   so a script (a migration) is split at its top-level semicolons.
enum PostgresSQLText {
    /// N when the statement uses exactly $1 ... $N (0 for none), nil when it skips a number.
    static func placeholderCount(in sql: String) -> Int? {
        let used = placeholders(in: sql)
        let highest = used.max() ?? 0
        return used.count == highest ? highest : nil
    }

    static func placeholders(in sql: String) -> Set<Int> {
        let bytes = Array(sql.utf8)
        var used: Set<Int> = []
        scan(bytes) { index in
            guard bytes[index] == UInt8(ascii: "$"), !(index > 0 && isWord(bytes[index - 1])) else { return }
            var end = index + 1
            while end < bytes.count, isDigit(bytes[end]) { end += 1 }
            if end > index + 1 { used.insert(Int(String(decoding: bytes[(index + 1)..<end], as: UTF8.self)) ?? 0) }
        }
        return used
    }

    /// The statements of a script, without their semicolons; empty ones (only space or comments) left out.
    static func statements(in sql: String) -> [String] {
        let bytes = Array(sql.utf8)
        var statements: [String] = []
        var start = 0
        var hasCode = false
        func flush(upTo end: Int) {
            if hasCode { statements.append(String(decoding: bytes[start..<end], as: UTF8.self)) }
            start = end + 1
            hasCode = false
        }
        scan(bytes) { index in
            if bytes[index] == UInt8(ascii: ";") {
                flush(upTo: index)
            } else if !isSpace(bytes[index]) {
                hasCode = true
            }
        }
        flush(upTo: bytes.count)
        return statements
    }

    /// Calls `visit` with the index of every byte outside literals, quoted identifiers, comments and
    /// dollar-quoted bodies (a literal's or identifier's first byte counts as code, so a statement
    /// holding only a literal is not empty).
    private static func scan(_ bytes: [UInt8], _ visit: (Int) -> Void) {
        var index = 0
        func at(_ offset: Int) -> UInt8 { index + offset < bytes.count ? bytes[index + offset] : 0 }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "'"):
                visit(index)
                // E'...' strings take backslash escapes; all take '' for a quote.
                let escapes = index > 0 && bytes[index - 1] | 0x20 == UInt8(ascii: "e") && !(index > 1 && isWord(bytes[index - 2]))
                index += 1
                while index < bytes.count {
                    if escapes && bytes[index] == UInt8(ascii: "\\") { index += 2; continue }
                    if bytes[index] == UInt8(ascii: "'") {
                        if at(1) == UInt8(ascii: "'") { index += 2; continue }
                        break
                    }
                    index += 1
                }
                index += 1
            case UInt8(ascii: "\""):
                visit(index)
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") || at(1) == UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\"") ? 2 : 1
                }
                index += 1
            case UInt8(ascii: "-") where at(1) == UInt8(ascii: "-"):
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where at(1) == UInt8(ascii: "*"):
                var depth = 0
                repeat {
                    if at(0) == UInt8(ascii: "/") && at(1) == UInt8(ascii: "*") { depth += 1; index += 2 }
                    else if at(0) == UInt8(ascii: "*") && at(1) == UInt8(ascii: "/") { depth -= 1; index += 2 }
                    else { index += 1 }
                } while depth > 0 && index < bytes.count
            case UInt8(ascii: "$") where !(index > 0 && isWord(bytes[index - 1])) && !isDigit(at(1)):
                // $tag$ ... $tag$ (the tag may be empty), else a lone $.
                var end = index + 1
                while end < bytes.count, isWord(bytes[end]) { end += 1 }
                guard end < bytes.count, bytes[end] == UInt8(ascii: "$") else {
                    visit(index)
                    index += 1
                    continue
                }
                visit(index)
                let tag = bytes[index...end]
                index = end + 1
                while index < bytes.count, !bytes[index...].starts(with: tag) { index += 1 }
                index += tag.count
            default:
                visit(index)
                index += 1
            }
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }

    private static func isWord(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "_") || byte >= 0x80 || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
            || isDigit(byte)
    }
}
