/// The `$N` placeholders in PostgreSQL SQL, skipping string literals, quoted identifiers,
/// dollar-quoted bodies and comments. PostgreSQL itself accepts parameters a statement never uses
/// when their types are given; knowing them lets the driver refuse those as SQLite does.
enum PostgresPlaceholders {
    /// N when the statement uses exactly $1 ... $N (0 for none), nil when it skips a number.
    static func count(in sql: String) -> Int? {
        let used = numbers(in: sql)
        let highest = used.max() ?? 0
        return used.count == highest ? highest : nil
    }

    static func numbers(in sql: String) -> Set<Int> {
        let bytes = Array(sql.utf8)
        var used: Set<Int> = []
        var index = 0
        func at(_ offset: Int) -> UInt8 { index + offset < bytes.count ? bytes[index + offset] : 0 }
        func isWord(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "_") || byte >= 0x80 || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }
        while index < bytes.count {
            let byte = bytes[index]
            let afterWord = index > 0 && isWord(bytes[index - 1])
            switch byte {
            case UInt8(ascii: "'"):
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
            case UInt8(ascii: "$") where !afterWord:
                var end = index + 1
                while end < bytes.count, bytes[end] >= UInt8(ascii: "0"), bytes[end] <= UInt8(ascii: "9") { end += 1 }
                if end > index + 1 {
                    used.insert(Int(String(decoding: bytes[(index + 1)..<end], as: UTF8.self)) ?? 0)
                    index = end
                    continue
                }
                // $tag$ ... $tag$ (the tag may be empty), else a lone $.
                while end < bytes.count, isWord(bytes[end]) { end += 1 }
                guard end < bytes.count, bytes[end] == UInt8(ascii: "$") else { index += 1; continue }
                let tag = bytes[index...end]
                index = end + 1
                while index < bytes.count, !bytes[index...].starts(with: tag) { index += 1 }
                index += tag.count
            default:
                index += 1
            }
        }
        return used
    }
}
