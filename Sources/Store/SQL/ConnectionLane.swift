import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// Which lane a connection serves.
enum LaneRole: Sendable {
    /// Projection batches and other writes.
    case write
    /// API reads, which must not queue behind a write batch.
    case read
}

/// One connection and the serial queue that owns it. Every blocking SQLite call, and every wait for a
/// postgres-nio answer, runs on that queue, never on the Swift concurrency pool or an event loop;
/// callers await the result.
final class ConnectionLane: @unchecked Sendable {
    private let queue: DispatchQueue
    private let connect: @Sendable () throws(StoreError) -> any DriverConnection
    private let logger: Logger
    // Touched only on `queue` (which is serial): the reason for @unchecked Sendable.
    private var connection: (any DriverConnection)?
    private var isClosed = false

    /// Attempts of a transaction that keeps hitting serialization failures or deadlocks.
    static let maxAttempts = 5

    init(label: String, logger: Logger, connect: @escaping @Sendable () throws(StoreError) -> any DriverConnection) {
        self.queue = DispatchQueue(label: label)
        self.logger = logger
        self.connect = connect
    }

    /// Runs `work` on the lane's queue and waits for it without holding a pool thread.
    func perform<T: Sendable>(_ work: @escaping @Sendable (ConnectionLane) throws(StoreError) -> T) async throws(StoreError) -> T {
        let result: Result<T, StoreError> = await withCheckedContinuation { continuation in
            queue.async {
                continuation.resume(returning: Result { () throws(StoreError) -> T in try work(self) })
            }
        }
        return try result.get()
    }

    // The methods below run on the queue only (inside `perform`).

    /// The open connection, connecting when there is none or the last one broke.
    func connected() throws(StoreError) -> any DriverConnection {
        guard !isClosed else { throw StoreError(.invalid, "the database is closed") }
        if let connection, !connection.isBroken { return connection }
        if connection != nil { logger.warning("database connection lost, reconnecting") }
        connection = nil
        let fresh = try connect()
        connection = fresh
        return fresh
    }

    /// Runs `work` (which must have no effect if it fails, like BEGIN or SELECT 1) and, if it failed
    /// because the server had dropped the idle connection, once more on a new connection.
    func onLiveConnection<T>(_ work: (any DriverConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        let first = try connected()
        do throws(StoreError) {
            return try work(first)
        } catch where first.isBroken {
            return try work(connected())
        }
    }

    /// `body` in one transaction: committed when it returns, rolled back when it throws, run again
    /// after a serialization failure or deadlock.
    func transaction<T>(_ body: (any DriverConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        var attempt = 1
        while true {
            let connection = try onLiveConnection { connection throws(StoreError) in
                try connection.begin()
                return connection
            }
            do throws(StoreError) {
                let value = try body(connection)
                try connection.commit()
                return value
            } catch {
                connection.rollback()
                guard connection.hitRetryableConflict, !connection.isBroken else { throw error }
                guard attempt < Self.maxAttempts else {
                    throw StoreError(.unavailable, "\(error.message) (still failing after \(attempt) attempts)")
                }
                logger.debug("transaction conflict, retrying", metadata: ["attempt": "\(attempt)", "error": "\(error.message)"])
                // Jittered back-off on this lane's own thread, so the competing transaction can finish.
                usleep(UInt32(attempt * 10_000 + Int.random(in: 0..<10_000)))
                attempt += 1
            }
        }
    }

    /// Closes the connection; later calls fail with `.invalid`.
    func shutDown() {
        connection?.close()
        connection = nil
        isClosed = true
    }
}
