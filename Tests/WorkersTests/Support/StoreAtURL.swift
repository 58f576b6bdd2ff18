import Entitlements
import StoreTestSupport

/// Runs `body` with the entitlement store at `url` (migrated on open), then closes it: for tests that
/// need the URL too (two stores on one database, a busy timeout in an SQLite URL).
func withStore<T: Sendable>(url: String, _ body: (EntitlementStore) async throws -> T) async throws -> T {
    let store = try await EntitlementStore.open(url: url, logger: TestDatabases.logger)
    let result: Result<T, any Error>
    do { result = .success(try await body(store)) } catch { result = .failure(error) }
    await store.close()
    return try result.get()
}
