/// PostgreSQL array literals (`{"a","b",NULL}`) passed as one text parameter, so a bulk statement
/// takes a whole column at once: `unnest($1::text[], $2::bigint[])`. Every text element is quoted,
/// which makes `NULL`, the empty string, spaces, commas and braces plain values; `"` and `\` are
/// the only characters the quoting escapes.
enum PostgresArray {
    static func text(_ values: [String?]) -> SQLValue {
        var literal = "{"
        var first = true
        for value in values {
            if !first { literal.append(",") }
            first = false
            guard let value else {
                literal.append("NULL")
                continue
            }
            literal.append("\"")
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { literal.append("\\") }
                literal.unicodeScalars.append(character)
            }
            literal.append("\"")
        }
        literal.append("}")
        return .text(literal)
    }

    static func int(_ values: [Int64?]) -> SQLValue {
        var literal = "{"
        var first = true
        for value in values {
            if !first { literal.append(",") }
            first = false
            literal.append(value.map { String($0) } ?? "NULL")
        }
        literal.append("}")
        return .text(literal)
    }
}
