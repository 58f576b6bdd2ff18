import Store
import StoreTestSupport
import Testing

/// Array parameters (`.textArray`, `.intArray`) read back on the server as exactly the values given:
/// the bulk statements' `unnest($1::text[], ...)` depends on it.
@Suite("PostgreSQL array parameters")
struct ArrayParameterTests {
    static let awkward: [String?] = ["plain", "a\"b", "back\\slash", "\\\"", "com,ma", "{brace}", "}{", "sp ace", " lead", "trail ",
                                     "NULL", "null", nil, "", "ünï-€-😀", "tab\tnew\nline", "'quote'", "(1,2)"]

    @Test("text arrays: quotes, backslashes, commas, braces, spaces, NULL and \"NULL\", empty, non-ASCII, in order")
    func textRoundTrip() async throws {
        try await TestDatabases.withDatabase(.postgres) { db in
            let rows = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT v, n FROM unnest($1::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n",
                                     [.textArray(Self.awkward)])
            }
            #expect(rows.map { $0.text("v") } == Self.awkward)
        }
    }

    @Test("bigint arrays with NULLs, arrays without NULLs, and empty arrays")
    func intRoundTrip() async throws {
        try await TestDatabases.withDatabase(.postgres) { db in
            let values: [Int64?] = [0, -1, nil, .max, .min, 42]
            let rows = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT v FROM unnest($1::bigint[]) WITH ORDINALITY AS t(v, n) ORDER BY n", [.intArray(values)])
            }
            #expect(rows.map { $0.int("v") } == values)
            let plain = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT a, b FROM unnest($1::text[], $2::int[]) AS t(a, b)", [.textArray(["x", "y"]), .intArray([1, 2])])
            }
            #expect(plain.map { $0.text("a") } == ["x", "y"])
            #expect(plain.map { $0.int("b") } == [1, 2])
            let none = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT v FROM unnest($1::text[]) AS t(v) UNION ALL SELECT v::text FROM unnest($2::bigint[]) AS u(v)",
                                     [.textArray([]), .intArray([])])
            }
            #expect(none.isEmpty)
        }
    }

    @Test("SQLite has no arrays: an array parameter is refused as .invalid")
    func sqliteRefusesArrays() async throws {
        try await TestDatabases.withDatabase(.sqlite) { db in
            let error = await storeError { () async throws(StoreError) in
                try await db.read { connection throws(StoreError) in try connection.query("SELECT $1 AS a", [.textArray(["x"])]) }
            }
            #expect(error?.kind == .invalid, "\(String(describing: error))")
        }
    }
}
