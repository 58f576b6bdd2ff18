import Foundation
import Synchronization
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One `tollgate serve` or `tollgate work` run by a test, with its output in a file: the tests kill it
/// with SIGKILL, send it SIGTERM, and start it again on the same spool or store.
final class ChildProcess: @unchecked Sendable {
    // @unchecked: `process` is only touched by the test that started it, one step at a time.
    let logFile: URL
    private let process: Process
    /// Where this run's output starts in the log file (a restart appends to the same file).
    private let logStart: UInt64

    /// Starts `tollgate <arguments>` in `directory`, its output appended to `<name>.log` there, with
    /// `environment` (`TOLLGATE_*` overrides) over the test's own, whose `TOLLGATE_*` are dropped.
    init(_ arguments: [String], directory: URL, name: String, environment: [String: String] = [:]) throws {
        logFile = directory.appendingPathComponent("\(name).log")
        if !FileManager.default.fileExists(atPath: logFile.path) {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: logFile)
        logStart = try log.seekToEnd()
        process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOLLGATE_") }
            .merging(environment) { _, given in given }
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try Subprocess.start(process)
        try log.close()
    }

    var isRunning: Bool { process.isRunning }
    /// Exited by itself with status 0 (not by a signal).
    var exitedCleanly: Bool { !process.isRunning && process.terminationReason == .exit && process.terminationStatus == 0 }
    /// This run's output so far.
    var output: String {
        guard let data = try? Data(contentsOf: logFile), data.count >= Int(logStart) else { return "" }
        return String(decoding: data.dropFirst(Int(logStart)), as: UTF8.self)
    }

    /// The gateway's port, once it printed `gateway: listening on http://HOST:PORT` (the last such line).
    func gatewayPort() async throws -> Int {
        try await eventually("the gateway prints its address", within: .seconds(60)) { () -> Int? in
            guard process.isRunning else { throw DevFailure("tollgate exited:\n\(output.suffix(3_000))") }
            let lines = output.split(separator: "\n").filter { $0.hasPrefix("gateway: listening on http://") }
            return lines.last.flatMap { DevProcess.listeningPort(in: String($0)) }
        }
    }

    func signal(_ number: Int32) {
        Glibc.kill(process.processIdentifier, number)
    }

    /// Waits for the exit; nil when it did not come within `timeout`.
    func waitForExit(within timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// `kill -9`: no shutdown code runs.
    func crash() async {
        signal(SIGKILL)
        _ = await waitForExit(within: .seconds(30))
    }

    /// Whatever is still running goes (end of a test, or a failure).
    func kill() async {
        guard process.isRunning else { return }
        await crash()
    }
}

/// A TCP connection to a local port that sends what it is given and then just stays open: a request
/// the server is still waiting on (headers sent, body not finished).
final class HeldConnection: @unchecked Sendable {
    // @unchecked: the descriptor is written once and closed once.
    private let descriptor: Int32

    init(port: Int, sending bytes: [UInt8]) throws {
        guard let descriptor = LoopbackSocket.connect(port: port) else { throw DevFailure("could not connect to 127.0.0.1:\(port)") }
        self.descriptor = descriptor
        guard bytes.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            Glibc.close(descriptor)
            throw DevFailure("could not send to 127.0.0.1:\(port)")
        }
    }

    /// A webhook request whose headers announce a body that never finishes: the server waits for it.
    static func unfinishedRequest(port: Int) throws -> HeldConnection {
        try HeldConnection(port: port, sending: Array(
            "POST /webhooks/apple HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"signed".utf8))
    }

    func close() { _ = Glibc.close(descriptor) }
}

/// The current address of a gateway that a test restarts (its port changes with each start).
final class GatewayAddress: Sendable {
    private let port = Mutex(0)
    func set(_ value: Int) { port.withLock { $0 = value } }
    var baseURL: String { "http://127.0.0.1:\(port.withLock { $0 })" }
}
