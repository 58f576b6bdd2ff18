@testable import Store
import StoreTestSupport
import Testing

@Suite("PostgreSQL SQL text: $N placeholders and statement ends")
struct PostgresSQLTextTests {
    @Test("placeholders in quotes, identifiers, comments and dollar-quoted bodies do not count", arguments: [
        ("SELECT 1", 0),
        ("SELECT $1", 1),
        ("SELECT $2, $1 + $1", 2),
        ("SELECT $10", nil),
        ("SELECT $1, $3", nil),
        ("SELECT '$3', \"$4\", $1 -- $5\n", 1),
        ("SELECT /* $6 /* $7 */ still comment $8 */ $1", 1),
        ("SELECT $$ $8 $$, $tag$ $9 $tag$, $2, $1", 2),
        ("SELECT E'\\' $3', 'it''s $4', $1", 1),
        ("SELECT \"a\"\"$5\", foo$1 FROM t", 0),
    ])
    func count(_ sql: String, _ expected: Int?) {
        #expect(PostgresSQLText.placeholderCount(in: sql) == expected)
    }

    @Test("a script splits at top-level semicolons only; empty statements are dropped", arguments: [
        ("CREATE TABLE a (x INT); CREATE TABLE b (y INT);", ["CREATE TABLE a (x INT)", " CREATE TABLE b (y INT)"]),
        ("SELECT ';' AS a; SELECT \"x;y\" FROM t -- ; no\n", ["SELECT ';' AS a", " SELECT \"x;y\" FROM t -- ; no\n"]),
        ("DO $$ BEGIN PERFORM 1; END $$;\n  ;  /* ; */ ", ["DO $$ BEGIN PERFORM 1; END $$"]),
        ("SELECT E'\\';' AS q", ["SELECT E'\\';' AS q"]),
        ("", []),
    ])
    func statements(_ sql: String, _ expected: [String]) {
        #expect(PostgresSQLText.statements(in: sql) == expected)
    }
}
