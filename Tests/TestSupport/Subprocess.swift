import Foundation
import Kafka

/// Runs blocking work on a thread of its own and awaits it. All test targets share one process
/// whose concurrency pool has as many threads as cores (two here), and Dispatch's global queues
/// share those threads: a test that blocks one (a child process, a blocking socket) starves the
/// gateways the tests running beside it (`make test` runs them in parallel) are talking to.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        onOwnThread { continuation.resume(with: Result { try work() }) }
    }
}

/// The same, for work that cannot fail.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        onOwnThread { continuation.resume(returning: work()) }
    }
}

/// Starts `work` on a new thread, never on the concurrency pool or a Dispatch queue.
public func onOwnThread(_ work: @escaping @Sendable () -> Void) {
    let thread = Thread { work() }
    thread.stackSize = 1 << 20
    thread.start()
}

/// Child processes for tests (openssl, kcat, the built `tollgate`), run off the pool.
public enum Subprocess {
    /// Every child of the test process starts here: not while a mock broker is going down, whose
    /// listener the child would hold open until it execs (see `MockCluster.startingChildProcess`).
    public static func start(_ process: Process) throws {
        try MockCluster.startingChildProcess { try process.run() }
    }

    public struct Result: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: String
        public var output: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `executable` to completion, feeding `stdin` and collecting both outputs.
    public static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil,
                           environment: [String: String]? = nil, directory: URL? = nil) async throws -> Result {
        try await offPool { try runBlocking(executable, arguments, stdin: stdin, environment: environment, directory: directory) }
    }

    /// The same, blocking the caller: only for code outside the pool (static initializers run via `offPool`).
    public static func runBlocking(_ executable: String, _ arguments: [String], stdin: Data? = nil,
                                   environment: [String: String]? = nil, directory: URL? = nil) throws -> Result {
        do {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            if let environment { process.environment = environment }
            if let directory { process.currentDirectoryURL = directory }
            let out = Pipe(), err = Pipe(), input = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = input
            try Subprocess.start(process)
            // stderr is drained on its own thread so a chatty child cannot block on a full pipe.
            let errors = ErrorCollector()
            let drained = DispatchGroup()
            drained.enter()
            onOwnThread {
                errors.data = err.fileHandleForReading.readDataToEndOfFile()
                drained.leave()
            }
            if let stdin { input.fileHandleForWriting.write(stdin) }
            try input.fileHandleForWriting.close()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            drained.wait()
            return Result(status: process.terminationStatus, stdout: data,
                          stderr: String(decoding: errors.data, as: UTF8.self))
        }
    }

    private final class ErrorCollector: @unchecked Sendable {
        // Written by the draining thread before `drained.leave()`, read after `drained.wait()`.
        var data = Data()
    }
}
