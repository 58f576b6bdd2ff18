/// PostgreSQL array literals (`{"a","b",NULL}`) passed as one text parameter, so a bulk statement
/// takes a whole column at once: `unnest($1::text[], $2::bigint[])`. Every text element is quoted,
/// which makes `NULL`, the empty string, spaces, commas and braces plain values; `"` and `\` are
/// the only characters the quoting escapes.
enum PostgresArray {
    static func text(_ values: [String?]) -> SQLValue { literal(values.map { $0.map(quoted) ?? "NULL" }) }

    static func int(_ values: [Int64?]) -> SQLValue { literal(values.map { $0.map { String($0) } ?? "NULL" }) }

    private static func literal(_ elements: [String]) -> SQLValue {
        .text("{" + elements.joined(separator: ",") + "}")
    }

    private static func quoted(_ value: String) -> String {
        var quoted = "\""
        for character in value.unicodeScalars {
            if character == "\"" || character == "\\" { quoted.append("\\") }
            quoted.unicodeScalars.append(character)
        }
        quoted.append("\"")
        return quoted
    }
}
