import Foundation
@testable import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

@Suite("PostgreSQL: lost connections, unreachable servers, conflicts")
struct PostgresRecoveryTests {
    @Test("after its connections are terminated the store reconnects on its own")
    func recoversFromTerminatedBackends() async throws {
        let server = try TestDatabases.serverURL()
        try await TestDatabases.withDatabase(.postgres) { db in
            try await db.migrate(MigrationTests.tables(1...1))
            #expect(await db.ping())  // opens the read connection too
            let name = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT current_database() AS name").first?.text("name")
            }
            let admin = try await SQLDatabase.open(url: server, logger: TestDatabases.logger)
            let terminated = try await admin.transaction { connection throws(StoreError) in
                // MATERIALIZED: the planner must not run the (volatile) terminate on rows it has not
                // filtered yet, such as this connection. The timeout waits until each backend is gone.
                try connection.query("""
                    WITH targets AS MATERIALIZED (
                        SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()
                    )
                    SELECT pid FROM targets WHERE pg_terminate_backend(pid, 5000)
                    """, [SQLValue(name)]).count
            }
            await admin.close()
            #expect(terminated == 2)

            let work: @Sendable (any SQLConnection) throws(StoreError) -> Int64? = { connection throws(StoreError) in
                try connection.query("SELECT id FROM t1").first?.int("id")
            }
            for lane in ["write", "read"] {
                let run = { () async throws(StoreError) -> Int64? in
                    lane == "write" ? try await db.transaction(work) : try await db.read(work)
                }
                // The first call may report the loss (or succeed on a new connection); the next must succeed.
                if let error = await storeError(run) { #expect(error.kind == .unavailable, "\(lane): \(error)") }
                #expect(try await run() == 1, "\(lane)")
            }
            #expect(await db.ping())

            // Lost in the middle of a transaction: that one fails as transient, the next one reconnects.
            let midway = await storeError { () async throws(StoreError) in
                try await db.transaction { connection throws(StoreError) in
                    try connection.execute("INSERT INTO t1 (id) VALUES (2)")
                    _ = try connection.query("SELECT pg_terminate_backend(pg_backend_pid()) AS gone")
                }
            }
            #expect(midway?.kind == .unavailable, "\(String(describing: midway))")
            #expect(try await db.transaction(work) == 1)
            let count = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT COUNT(*) AS n FROM t1").first?.int("n")
            }
            #expect(count == 1, "the interrupted transaction left nothing behind")
        }
    }

    @Test("a port nobody listens on is .unavailable at once")
    func refusedPort() async throws {
        let started = ContinuousClock.now
        let port = LoopbackListener.freePort()
        let error = await storeError { () async throws(StoreError) in
            try await SQLDatabase.open(url: "postgres://postgres:s3cret@127.0.0.1:\(port)/tollgate", logger: TestDatabases.logger)
        }
        #expect(error?.kind == .unavailable)
        #expect(error?.message.contains("s3cret") == false, "\(String(describing: error))")
        #expect(error?.message.contains("127.0.0.1") == true, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test("a server that never answers is .unavailable after the URL's connect_timeout")
    func silentServer() async throws {
        let listener = LoopbackListener()  // accepts, never speaks
        defer { listener.close() }
        let started = ContinuousClock.now
        let error = await storeError { () async throws(StoreError) in
            // libpq's minimum is 2 s; the default of 5 s is overridden by the URL.
            try await SQLDatabase.open(url: "postgres://postgres@127.0.0.1:\(listener.port)/x?connect_timeout=2&sslmode=disable",
                                       logger: TestDatabases.logger)
        }
        #expect(error?.kind == .unavailable)
        #expect(ContinuousClock.now - started < .milliseconds(4_500))
    }

    @Test("connections carry a statement timeout and the application name")
    func sessionDefaults() async throws {
        try await TestDatabases.withDatabase(.postgres) { db in
            let settings = try await db.read { connection throws(StoreError) in
                try connection.query("SELECT current_setting('statement_timeout') AS timeout, current_setting('application_name') AS app").first
            }
            #expect(settings?.text("timeout") == "30s")
            #expect(settings?.text("app") == "tollgate")
        }
    }

    @Test("a deadlock victim's transaction runs again and both transactions commit")
    func deadlockRetried() async throws {
        try await TestDatabases.withURL(.postgres) { url in
            let first = try await SQLDatabase.open(url: url, logger: TestDatabases.logger)
            let second = try await SQLDatabase.open(url: url, logger: TestDatabases.logger)
            try await first.transaction { connection throws(StoreError) in
                try connection.execute("CREATE TABLE counters (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)")
                try connection.execute("INSERT INTO counters (id, n) VALUES (1, 0), (2, 0)")
            }
            let attempts = Atomic<Int>(0), holding = Atomic<Int>(0)
            // Each locks one row, waits until the other holds its row, then wants the other's: a deadlock.
            let crossing: @Sendable (Int64, Int64) -> @Sendable (any SQLConnection) throws(StoreError) -> Void = { mine, theirs in
                { connection throws(StoreError) in
                    let attempt = attempts.add(1, ordering: .sequentiallyConsistent).newValue
                    try connection.execute("UPDATE counters SET n = n + 1 WHERE id = $1", [.int(mine)])
                    if attempt <= 2 {
                        holding.add(1, ordering: .sequentiallyConsistent)
                        let deadline = Date().addingTimeInterval(5)
                        while holding.load(ordering: .sequentiallyConsistent) < 2, Date() < deadline { usleep(5_000) }
                    }
                    try connection.execute("UPDATE counters SET n = n + 1 WHERE id = $1", [.int(theirs)])
                }
            }
            async let a: Void = first.transaction(crossing(1, 2))
            async let b: Void = second.transaction(crossing(2, 1))
            _ = try await (a, b)
            #expect(attempts.load(ordering: .sequentiallyConsistent) == 3)
            let counts = try await first.read { connection throws(StoreError) in
                try connection.query("SELECT n FROM counters ORDER BY id").compactMap { $0.int("n") }
            }
            #expect(counts == [2, 2])
            await first.close()
            await second.close()
        }
    }
}
