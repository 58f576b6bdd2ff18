import Entitlements
import Foundation
import Logging
import Store
import TestSupport

/// The backends every driver test runs against.
public enum Backend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite, postgres
    public var description: String { rawValue }
}

/// Fresh, empty databases for one test, removed afterwards: an SQLite file in a new temp dir, or a
/// new database on the PostgreSQL server that `scripts/with-postgres.sh` starts.
public enum TestDatabases {
    public static let logger: Logger = {
        var logger = Logger(label: "tollgate.store.tests")
        logger.logLevel = .warning
        return logger
    }()

    /// Runs `body` with the URL of a new database, then removes it.
    public static func withURL<T: Sendable>(_ backend: Backend, _ body: (String) async throws -> T) async throws -> T {
        switch backend {
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-store-\(UUID().uuidString)")
            // A missing parent directory, which open must create.
            let url = "sqlite:" + dir.appendingPathComponent("nested/store.sqlite").path
            return try await cleaningUp(body, url) { try? await offPool { try FileManager.default.removeItem(at: dir) } }
        case .postgres:
            let server = try serverURL()
            let name = "tollgate_t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            let admin = try await SQLDatabase.open(url: server, logger: logger)
            try await admin.executeOutsideTransaction("CREATE DATABASE \(name)")
            return try await cleaningUp(body, try databaseURL(server, name)) {
                // FORCE: a store the test did not close must not keep the database alive.
                try? await admin.executeOutsideTransaction("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
                await admin.close()
            }
        }
    }

    /// Runs `body` with a new, migrated entitlement store, then closes and removes it.
    public static func withStore<T: Sendable>(_ backend: Backend, _ body: (EntitlementStore) async throws -> T) async throws -> T {
        try await withURL(backend) { url in
            let store = try await EntitlementStore.open(url: url, logger: logger)
            return try await cleaningUp(body, store) { await store.close() }
        }
    }

    /// Runs `body` with a new, open database, then closes and removes it.
    public static func withDatabase<T: Sendable>(_ backend: Backend, _ body: (SQLDatabase) async throws -> T) async throws -> T {
        try await withURL(backend) { url in
            let database = try await SQLDatabase.open(url: url, logger: logger)
            return try await cleaningUp(body, database) { await database.close() }
        }
    }

    /// The server from TEST_POSTGRES_URL; a failure (never a skip) when it is not set.
    public static func serverURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["TEST_POSTGRES_URL"], !url.isEmpty else {
            throw MissingPostgres()
        }
        return url
    }

    public struct MissingPostgres: Error, CustomStringConvertible {
        public var description: String {
            "TEST_POSTGRES_URL is not set: run the PostgreSQL tests through `make test` or "
                + "`scripts/with-postgres.sh swift test --skip-build --filter StoreTests`, which start a throwaway server"
        }
    }

    /// `server` with its database name replaced by `name`.
    private static func databaseURL(_ server: String, _ name: String) throws -> String {
        guard var components = URLComponents(string: server) else {
            throw StoreError(.invalid, "TEST_POSTGRES_URL is not a URL: \(server)")
        }
        components.path = "/" + name
        guard let url = components.string else { throw StoreError(.invalid, "cannot build a URL for \(name)") }
        return url
    }

    /// `body(value)`, then `cleanup` whether it threw or not.
    private static func cleaningUp<V, T: Sendable>(_ body: (V) async throws -> T, _ value: V,
                                                   _ cleanup: () async -> Void) async throws -> T {
        let result: Result<T, any Error>
        do { result = .success(try await body(value)) } catch { result = .failure(error) }
        await cleanup()
        return try result.get()
    }
}

/// The StoreError `body` throws, or nil when it succeeds.
public func storeError<T>(_ body: () async throws(StoreError) -> T) async -> StoreError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}
