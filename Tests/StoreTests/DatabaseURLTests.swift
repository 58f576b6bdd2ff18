@testable import Store
import StoreTestSupport
import Testing

@Suite("Database URLs")
struct DatabaseURLTests {
    @Test("malformed or unknown URLs are .invalid, without the password", arguments: [
        "", "mysql://root:s3cret@db/tollgate", "sqlite:", "sqlite::memory:", "postgres://u:s3cret@db:notaport/tollgate",
        "postgres://u:s3cret@db:99999/tollgate", "postgresql://u:s3cret@db/tollgate?nonsense=1", "postgres://u:s3cret@[::1/x",
        "sqlite:/tmp/x.sqlite?nonsense=1", "sqlite:/tmp/x.sqlite?busy_timeout_ms=soon", "sqlite:?busy_timeout_ms=10",
    ])
    func invalidURLs(_ url: String) async {
        let error = await storeError { () async throws(StoreError) in try await SQLDatabase.open(url: url, logger: TestDatabases.logger) }
        #expect(error?.kind == .invalid, "\(String(describing: error))")
        #expect(error?.message.contains("s3cret") == false, "\(String(describing: error))")
    }

    @Test("an SQLite URL may set the busy timeout; the default is 5 s")
    func sqliteBusyTimeout() throws {
        #expect(try DatabaseURL.parse("sqlite:/var/lib/t.sqlite?busy_timeout_ms=200") == .sqlite(path: "/var/lib/t.sqlite", busyTimeoutMs: 200))
        #expect(try DatabaseURL.parse("sqlite:/var/lib/t.sqlite") == .sqlite(path: "/var/lib/t.sqlite", busyTimeoutMs: 5_000))
    }

    @Test("a PostgreSQL URL is read as libpq reads it: parts, escapes, IPv6, socket directories, options and defaults")
    func postgresURL() throws {
        let full = try PostgresURL.parse(
            "postgresql://tollgate:p%40ss%3Aword@db.internal:6543/store?sslmode=verify-full&connect_timeout=1&application_name=w1&options=-c%20statement_timeout%3D5000")
        #expect(full.endpoint == .tcp(host: "db.internal", port: 6543))
        #expect(full.user == "tollgate")
        #expect(full.password == "p@ss:word")
        #expect(full.database == "store")
        #expect(full.sslMode == .verifyFull)
        #expect(full.connectTimeoutSeconds == 2, "libpq's least timeout is 2 s")
        #expect(full.applicationName == "w1")
        #expect(full.options == "-c statement_timeout=5000")

        let defaults = try PostgresURL.parse("postgres://u@[::1]/x")
        #expect(defaults.endpoint == .tcp(host: "::1", port: 5432))
        #expect(defaults.password == nil)
        #expect(defaults.sslMode == .prefer)
        #expect(defaults.connectTimeoutSeconds == 5)
        #expect(defaults.applicationName == "tollgate")
        #expect(defaults.options == "-c statement_timeout=30000")

        let socket = try PostgresURL.parse("postgres:///x?host=%2Fvar%2Frun%2Fpostgresql&port=5433&user=me&connect_timeout=0")
        #expect(socket.endpoint == .unixSocket(path: "/var/run/postgresql/.s.PGSQL.5433"))
        #expect(socket.user == "me")
        #expect(socket.database == "x")
        #expect(socket.connectTimeoutSeconds == nil, "0 waits forever")
    }

    @Test("the redacted URL hides the password in the user info and the query")
    func redaction() {
        #expect(redactingPassword("postgres://tollgate:s3cr@t@db.internal:5432/store?sslmode=require&password=other")
            == "postgres://tollgate:***@db.internal:5432/store?sslmode=require&password=***")
        #expect(redactingPassword("postgresql://tollgate@db/store") == "postgresql://tollgate@db/store")
        #expect(redactingPassword("postgres://db/store?PASSWORD=x") == "postgres://db/store?password=***")
        #expect(redactingPassword("sqlite:/var/lib/tollgate/store.sqlite") == "sqlite:/var/lib/tollgate/store.sqlite")
    }

    @Test("SQLRow lookups: exact name first, then any case; absent is .null")
    func rowLookup() {
        let row = SQLRow(columns: SQLColumns(["userId", "userid", "flag"]), values: [1, 2, .bool(true)])
        #expect(row["userId"] == .int(1))
        #expect(row["userid"] == .int(2))
        #expect(row["USERID"] == .int(1))
        #expect(row.bool("flag") == true)
        #expect(row["missing"] == .null)
        #expect(row.text("userId") == nil)
    }
}
