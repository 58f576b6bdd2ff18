import Dispatch
import Store
import Synchronization

/// SQLite's write lock held by a connection of its own, as another process writing to the file would
/// hold it: the store's writes wait for their busy timeout, then fail as transient (`.unavailable`).
public final class SQLiteWriteLock: Sendable {
    private let database: SQLDatabase
    private let releaseSignal = DispatchSemaphore(value: 0)
    private let released = Mutex(false)
    private let holding = Mutex<Task<Void, any Error>?>(nil)

    private init(database: SQLDatabase) { self.database = database }

    /// Runs `body` while the lock of the SQLite database at `url` is held; `body` may release it early.
    public static func holding<T: Sendable>(_ url: String, _ body: (SQLiteWriteLock) async throws -> T) async throws -> T {
        let lock = SQLiteWriteLock(database: try await SQLDatabase.open(url: url, logger: TestDatabases.logger))
        let result: Result<T, any Error>
        do {
            try await lock.take()
            result = .success(try await body(lock))
        } catch {
            result = .failure(error)
        }
        await lock.release()
        return try result.get()
    }

    /// Begins a write transaction (BEGIN IMMEDIATE) and keeps it open. Its body waits on the database's
    /// own queue, so no thread of the concurrency pool is held.
    private func take() async throws {
        let (taken, signal) = AsyncStream.makeStream(of: Void.self)
        let task = Task { [database, releaseSignal] in
            defer { signal.finish() }
            try await database.transaction { _ throws(StoreError) in
                signal.yield()
                releaseSignal.wait()
            }
        }
        holding.withLock { $0 = task }
        for await _ in taken { return }
        // The transaction never began.
        try await task.value
    }

    /// Ends the transaction (it wrote nothing) and closes the connection. Safe to call again.
    public func release() async {
        let first = released.withLock { released in
            defer { released = true }
            return !released
        }
        guard first else { return }
        releaseSignal.signal()
        _ = await holding.withLock { $0 }?.result
        await database.close()
    }
}
