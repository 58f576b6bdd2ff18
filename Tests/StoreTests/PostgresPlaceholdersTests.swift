@testable import Store
import StoreTestSupport
import Testing

@Suite("Counting $N in PostgreSQL SQL")
struct PostgresPlaceholdersTests {
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
        #expect(PostgresPlaceholders.count(in: sql) == expected)
    }
}
