import StoreTestSupport
import Testing
@testable import Store

/// The array literals of the bulk statements read back on the server as exactly the values given.
@Suite("PostgreSQL array parameters")
struct PostgresArrayTests {
    static let awkward: [String?] = ["plain", "a\"b", "back\\slash", "\\\"", "com,ma", "{brace}", "}{", "sp ace", " lead", "trail ",
                                     "NULL", "null", nil, "", "ünï-€-😀", "tab\tnew\nline", "'quote'", "(1,2)"]

    @Test("text arrays: quotes, backslashes, commas, braces, spaces, NULL and \"NULL\", empty, non-ASCII, in order")
    func textRoundTrip() async throws {
        try await TestDatabases.withDatabase(.postgres) { db in
            let rows = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT v, n FROM unnest($1::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n",
                                     [PostgresArray.text(Self.awkward)])
            }
            #expect(rows.map { $0.text("v") } == Self.awkward)
        }
    }

    @Test("bigint arrays with NULLs, and an empty array")
    func intRoundTrip() async throws {
        try await TestDatabases.withDatabase(.postgres) { db in
            let values: [Int64?] = [0, -1, nil, .max, .min, 42]
            let rows = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT v FROM unnest($1::bigint[]) WITH ORDINALITY AS t(v, n) ORDER BY n", [PostgresArray.int(values)])
            }
            #expect(rows.map { $0.int("v") } == values)
            let none = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT v FROM unnest($1::text[]) AS t(v)", [PostgresArray.text([])])
            }
            #expect(none.isEmpty)
        }
    }

    @Test("the literal's spelling")
    func spelling() {
        #expect(PostgresArray.text(["a", nil, "", "x\"y\\z"]) == .text(#"{"a",NULL,"","x\"y\\z"}"#))
        #expect(PostgresArray.int([1, nil, -2]) == .text("{1,NULL,-2}"))
        #expect(PostgresArray.text([]) == .text("{}"))
    }
}
