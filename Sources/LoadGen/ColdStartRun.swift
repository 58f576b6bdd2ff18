import Foundation
import Glibc
import Verifiers

/// `tollgate-load cold-start`: the first seconds of a fresh `tollgate serve`. Signs the Apple
/// deliveries first (so the gateway gets no idle time to warm up in), starts the gateway pinned to its
/// core, polls `/readyz` every 2 ms and, the moment it answers 200, drives signed Apple deliveries
/// over `connections` keep-alive connections, closed loop, for `seconds`. What a load balancer that
/// trusts `/readyz` sends a new replica, and how long those first requests wait.
struct ColdStartRun {
    struct Options {
        var directory = ""
        var tollgate = ""
        var brokers = ""
        var gatewayCPU = 1
        var clientCPU = 0
        var connections = 16
        var seconds = 1.5
        var deliveries = 8_000
        /// Where the gateway's process id is written while it runs, so the caller can stop it should this end early.
        var pidFile: String?
        /// Drive as soon as the listener is open, without waiting for `/readyz`: what readiness spares a new replica.
        var ignoreReadiness = false
    }

    struct Result: Codable {
        var sender = AppleSender.name.rawValue
        /// `readyz`: driven from the moment `/readyz` answered 200; `listening`: from the moment the port was open.
        var drivenFrom: String
        var connections: Int
        var seconds: Double
        /// From starting the process to `/readyz` answering 200 (or the port open, `drivenFrom` listening).
        var startToReadyMs: Double
        var requests: Int
        var errors: Int
        var firstError: String?
        var requestsPerSec: Double
        var p50Ms: Double
        var p99Ms: Double
        var maxMs: Double
    }

    let options: Options

    func run() throws -> Result {
        let traffic = try SenderTraffic.load(AppleSender.name.rawValue, directory: options.directory)
        let arena = RequestArena.generate(traffic, first: 0, count: options.deliveries, run: randomHex(4), host: "127.0.0.1")
        log("cold start: signed \(options.deliveries) Apple deliveries; starting tollgate serve on cpu \(options.gatewayCPU)")

        let gateway = Process()
        gateway.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        gateway.arguments = ["-c", "\(options.gatewayCPU)", options.tollgate, "serve", "--config", options.directory + "/" + BenchSetup.configFile]
        gateway.environment = ProcessInfo.processInfo.environment.merging(["TOLLGATE_KAFKA_BROKERS": options.brokers]) { $1 }
        let output = Pipe()
        gateway.standardOutput = output
        gateway.standardError = FileHandle.nullDevice
        let started = Clock.now()
        try gateway.run()
        if let pidFile = options.pidFile { try "\(gateway.processIdentifier)\n".write(toFile: pidFile, atomically: true, encoding: .utf8) }
        defer {
            gateway.terminate()
            gateway.waitUntilExit()
            if let pidFile = options.pidFile { try? FileManager.default.removeItem(atPath: pidFile) }
        }
        let port = try Self.listeningPort(output.fileHandleForReading)
        let deadline = Clock.now() + 30_000_000_000
        while !options.ignoreReadiness, (try? GatewayEndpoints.get(port: port, path: "/readyz").status) != 200 {
            guard Clock.now() < deadline, gateway.isRunning else { throw LoadGenError("cold start: the gateway was not ready within 30 s") }
            usleep(2_000)
        }
        let ready = Clock.now()
        guard ThreadAffinity.pin(to: options.clientCPU) else { throw LoadGenError("cannot pin to cpu \(options.clientCPU)") }
        let outcome = try LoadDriver(port: port, connections: options.connections).run(arena, mode: .closed(seconds: options.seconds), sample: {})
        ThreadAffinity.restore()
        let latencies = Latencies(outcome.latencies)
        let result = Result(drivenFrom: options.ignoreReadiness ? "listening" : "readyz", connections: options.connections, seconds: rounded3(outcome.seconds),
                            startToReadyMs: rounded1(Double(ready - started) / 1e6), requests: outcome.answered, errors: outcome.errors,
                            firstError: outcome.firstError, requestsPerSec: rounded1(outcome.perSecond),
                            p50Ms: rounded3(latencies.milliseconds(0.5)), p99Ms: rounded3(latencies.milliseconds(0.99)),
                            maxMs: rounded3(latencies.maxMilliseconds))
        log("  \(result.drivenFrom) \(result.startToReadyMs) ms after start; then \(result.requests) requests in \(result.seconds) s: "
            + "p50 \(result.p50Ms) ms, p99 \(result.p99Ms) ms, max \(result.maxMs) ms, errors \(result.errors)")
        return result
    }

    /// The port from the gateway's `gateway: listening on http://host:port` line.
    private static func listeningPort(_ output: FileHandle) throws -> UInt16 {
        var text = ""
        while true {
            let data = output.availableData
            guard !data.isEmpty else { throw LoadGenError("cold start: the gateway exited before listening") }
            text += String(decoding: data, as: UTF8.self)
            for line in text.split(separator: "\n") where line.hasPrefix("gateway: listening on http://") {
                if let port = line.split(separator: ":").last.flatMap({ UInt16($0) }) { return port }
            }
        }
    }
}
