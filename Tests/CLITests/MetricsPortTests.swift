import Events
import Foundation
import Kafka
import TestSupport
import Testing
import Verifiers
#if canImport(Glibc)
import Glibc
#endif

/// `metrics.port`: `/metrics` on a listener of its own, for the gateway (`serve`) and the workers
/// (`work`), and no longer beside the webhooks or the entitlement API.
@Suite("metrics.port: /metrics on its own listener", .serialized)
struct MetricsPortTests {
    /// `metrics: listening on http://HOST:PORT/metrics` -> PORT.
    static func metricsPort(_ process: ChildProcess) async throws -> Int {
        try await eventually("the process prints its metrics address", within: .seconds(60)) { () -> Int? in
            guard process.isRunning else { throw DevFailure("tollgate exited:\n\(process.output.suffix(3_000))") }
            let prefix = "metrics: listening on http://"
            guard let line = process.output.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
            return line.dropFirst(prefix.count).prefix { $0 != "/" }.split(separator: ":").last.flatMap { Int($0) }
        }
    }

    static func expectOnlyMetrics(port: Int, families prefix: String) async throws {
        let base = "http://127.0.0.1:\(port)"
        let metrics = try await HTTP.request("GET", base + "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains(prefix), "\(metrics.body.prefix(500))")
        let readyz = try await HTTP.request("GET", base + "/readyz")
        #expect(readyz.status == 404, "only /metrics is served there")
        let post = try await HTTP.request("POST", base + "/metrics", body: "")
        #expect(post.status == 405)
    }

    static func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("serve: /metrics on metrics.port, 404 on the webhooks' port")
    func gateway() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = try MockCluster(brokers: 1)
        let config = """
            http: { host: 127.0.0.1, port: 0 }
            metrics: { port: 0 }
            kafka: { brokers: "\(cluster.bootstrapServers)" }
            spool: { path: \(directory.appendingPathComponent("spool.sqlite").path) }
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        let gateway = try ChildProcess(["serve", "--config", configPath], directory: directory, name: "gateway")
        defer { if gateway.isRunning { gateway.signal(SIGKILL) } }
        let publicPort = try await gateway.gatewayPort()
        let metricsPort = try await Self.metricsPort(gateway)
        #expect(metricsPort != publicPort)
        // A request on the public port is counted, and shows on the metrics port.
        let onPublic = try await HTTP.request("GET", "http://127.0.0.1:\(publicPort)/metrics")
        #expect(onPublic.status == 404 && onPublic.body.contains(#""error":"not_found""#), "\(onPublic.body)")
        #expect(try await HTTP.request("GET", "http://127.0.0.1:\(publicPort)/healthz").status == 200)
        try await Self.expectOnlyMetrics(port: metricsPort, families: "tollgate_http_requests_total")
        gateway.signal(SIGTERM)
        #expect(await gateway.waitForExit(within: .seconds(20)) == 0)
    }

    @Test("work: /metrics on metrics.port, 404 on api.port beside the entitlement API")
    func workers() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = try MockCluster(brokers: 1)
        for topic in TopicNames(sources: SenderCatalog.standard.names).all { try cluster.createTopic(topic.name, partitions: 1) }
        let config = """
            http: { host: 127.0.0.1 }
            api: { port: 0 }
            metrics: { port: 0 }
            log: { level: info }
            kafka: { brokers: "\(cluster.bootstrapServers)" }
            store: { url: "sqlite:\(directory.appendingPathComponent("store.sqlite").path)" }
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        let workers = try ChildProcess(["work", "--config", configPath], directory: directory, name: "work")
        defer { if workers.isRunning { workers.signal(SIGKILL) } }
        let metricsPort = try await Self.metricsPort(workers)
        // The API's port, from its log line (`address=127.0.0.1:PORT`).
        let apiPort = try await eventually("the workers log their address") { () -> Int? in
            guard let line = workers.output.split(separator: "\n").first(where: { $0.contains("workers listening") }),
                  let range = line.range(of: "address=127.0.0.1:") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        let onAPI = try await HTTP.request("GET", "http://127.0.0.1:\(apiPort)/metrics")
        #expect(onAPI.status == 404, "\(onAPI.body)")
        #expect(try await HTTP.request("GET", "http://127.0.0.1:\(apiPort)/healthz").status == 200)
        try await Self.expectOnlyMetrics(port: metricsPort, families: "tollgate_")
        workers.signal(SIGTERM)
        #expect(await workers.waitForExit(within: .seconds(20)) == 0)
    }
}
