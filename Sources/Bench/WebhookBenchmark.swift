import Config
import Entitlements
import Events
import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import Merchant
import NIOSSL
import Outbound
import Store
import Synchronization
import Toolkit
import Webhooks
#if canImport(Glibc)
import Glibc
#endif

/// Outbound webhooks in `make bench`: how many signed deliveries the dispatcher makes per second on the
/// core it is pinned to, to an HTTPS receiver on the other core (every delivery through the store:
/// claimed, built, signed, posted, recorded), and the time from a webhook's 2xx at a running
/// `tollgate dev` to the endpoint receiving its delivery, at half of that rate.
enum WebhookBenchmark {
    struct Chain {
        let caFile, certFile, keyFile: String
    }

    /// A CA and a certificate for `localhost` it signs (openssl's command line), as the tests make theirs.
    static func chain(in directory: String) throws -> Chain {
        let path = { (name: String) in directory + "/" + name }
        func run(_ arguments: [String]) throws {
            guard runWithDefaultSignals("/usr/bin/openssl", arguments) != nil else {
                throw BenchError(description: "openssl \(arguments.first ?? "") failed")
            }
        }
        try run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("ca.key"),
                 "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=Tollgate bench CA",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
        try run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("key.pem"),
                 "-out", path("csr.pem"), "-subj", "/CN=localhost"])
        try Data("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".utf8).write(to: URL(fileURLWithPath: path("ext.cnf")))
        try run(["x509", "-req", "-in", path("csr.pem"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
                 "-out", path("cert.pem"), "-days", "2", "-extfile", path("ext.cnf")])
        guard FileManager.default.fileExists(atPath: path("cert.pem")) else { throw BenchError(description: "openssl made no certificate") }
        return Chain(caFile: path("ca.pem"), certFile: path("cert.pem"), keyFile: path("key.pem"))
    }

    /// An HTTPS endpoint answering 204 to every POST, calling `received` with the body first.
    static func receiver(_ chain: Chain, received: @escaping @Sendable ([UInt8]) -> Void,
                         onListening: @escaping @Sendable (Int) async -> Void) throws -> some ApplicationProtocol {
        let router = Router()
        router.post("hooks") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 1 << 20)
            received(Array(buffer: body))
            return .noContent
        }
        let tls = TLSConfiguration.makeServerConfiguration(certificateChain: try NIOSSLCertificate.fromPEMFile(chain.certFile).map { .certificate($0) },
                                                           privateKey: .privateKey(try NIOSSLPrivateKey(file: chain.keyFile, format: .pem)))
        return Application(router: router, server: try .tls(.http1(), tlsConfiguration: tls),
                           configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                           onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
                           logger: Logger(label: "bench-receiver"))
    }

    /// `tollgate-bench --webhook-receiver --cert C --key K`: the receiver as a process of its own; prints its port.
    static func runReceiver(certFile: String, keyFile: String) async throws {
        let app = try receiver(Chain(caFile: "", certFile: certFile, keyFile: keyFile), received: { _ in }) { port in
            FileHandle.standardOutput.write(Data("\(port)\n".utf8))
        }
        try await app.runService()
    }

    struct Throughput {
        var deliveries: Int
        var wallSeconds: Double
        var cpuSeconds: Double
        var perSecond: Double { Double(deliveries) / wallSeconds }
    }

    /// `messages` recorded as the projection records them (1,000 entitlements), then delivered by one
    /// dispatcher in this process to a receiver process on `receiverCPU`.
    static func throughput(messages: Int, receiverCPU: Int) async throws -> Throughput {
        let directory = NSTemporaryDirectory() + "tollgate-bench-webhooks-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let chain = try chain(in: directory)
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        receiver.arguments = ["-c", String(receiverCPU), CommandLine.arguments[0], "--webhook-receiver", "--cert", chain.certFile, "--key", chain.keyFile]
        let out = Pipe()
        receiver.standardOutput = out
        try receiver.run()
        defer { kill(receiver.processIdentifier, SIGKILL) }
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(line) else { throw BenchError(description: "the receiver printed \(line), not its port") }

        var logger = Logger(label: "bench")
        logger.logLevel = .error
        let store = try await EntitlementStore.open(url: "sqlite:\(directory)/store.sqlite", logger: logger)
        var settings = WebhookSettings()
        var endpoint = WebhookSettings.Endpoint(name: "bench", url: "https://localhost:\(port)/hooks")
        endpoint.secrets = [WebhookSecret.generate()]
        settings.endpoints = [endpoint]
        settings.allowLoopback = true
        settings.caFile = chain.caFile
        let setup = try WebhookSetup(settings: settings)
        let wakeup = WebhookWakeup()
        let outbox = WebhookOutbox(endpoints: setup.endpoints, wakeup: wakeup)
        let now = Timestamp.now.millisecondsSince1970
        for start in stride(from: 0, to: messages, by: 500) {
            let applied = (start..<min(messages, start + 500)).map { WebhookBenchmark.applied(user: "bench-\($0 % 1_000)", step: $0) }
            _ = try await store.database.transaction { connection throws(StoreError) in try outbox.record(applied, nowMs: now, on: connection) }
        }
        let webhooks = WebhookStore(store: store)
        let dispatcher = WebhookDispatcher(endpoints: setup.endpoints, settings: settings, store: webhooks, purchaseIds: store.purchaseIds,
                                           catalog: CatalogSettings(), wakeup: wakeup, metrics: WebhookMetrics(), logger: logger)
        let cpuBefore = cpuSeconds()
        let started = ContinuousClock.now
        let run = Task { try await dispatcher.run() }
        // Done when nothing waits: an index lookup, not a count.
        while try await store.database.read({ connection throws(StoreError) in
            try !connection.query("SELECT 1 AS waiting FROM webhook_deliveries WHERE endpoint = 'bench' AND status = 'pending' LIMIT 1").isEmpty
        }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let wall = ContinuousClock.now - started
        let cpu = cpuSeconds() - cpuBefore
        run.cancel()
        _ = try? await run.value
        let delivered = try await store.database.read { connection throws(StoreError) in
            try connection.query("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'").first?.int("n") ?? 0
        }
        await store.close()
        guard delivered == Int64(messages) else { throw BenchError(description: "\(delivered) of \(messages) messages delivered") }
        return Throughput(deliveries: messages, wallSeconds: Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18,
                          cpuSeconds: cpu)
    }

    static func applied(user: String, step: Int) -> AppliedEvent {
        let event = NormalizedEvent(id: "bench-\(step)", type: .subscriptionRenewed, source: "/iaptic/shop", environment: .production, app: "shop",
                                    subject: "\(user)-sub", occurredAt: "2026-11-27T00:00:00.000Z", receivedAt: "2026-11-27T00:00:01.000Z",
                                    user: user, product: "premium", transaction: .init(id: "t-\(step)", originalId: "\(user)-sub"),
                                    sourceType: "purchases.updated")
        let entitlement = Entitlement(app: "shop", environment: "production", user: user, product: "premium", source: "iaptic",
                                      subject: "\(user)-sub", state: .active, expiresAtMs: 4_000_000_000_000, gracePeriodExpiresAtMs: nil)
        return AppliedEvent(event: event, entitlement: entitlement, active: true)
    }

    struct Latency {
        var rate: Double
        var sent: Int
        var received: Int
        var p50Ms: Double
        var p99Ms: Double
    }

    /// `tollgate dev` (on `devCPU`) with one events endpoint, this process's receiver; Iaptic callbacks,
    /// each a new user's purchase, sent open loop at `rate` for `seconds`: from each one's 2xx to its delivery arriving.
    static func latency(tollgate: String, rate: Double, seconds: Double, devCPU: Int) async throws -> Latency {
        let directory = NSTemporaryDirectory() + "tollgate-bench-webhook-latency-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let chain = try chain(in: directory)
        let arrivals = Arrivals()
        let listening = Mutex<Int?>(nil)
        let app = try receiver(chain, received: { body in
            guard let user = userNumber(in: body) else { return }
            let now = ContinuousClock.now
            arrivals.seen.withLock { $0[user] = $0[user] ?? now }
        }, onListening: { port in listening.withLock { $0 = port } })
        let server = Task { try await app.runService() }
        defer { server.cancel() }
        var port: Int?
        for _ in 0..<500 where port == nil {
            try await Task.sleep(for: .milliseconds(10))
            port = listening.withLock { $0 }
        }
        guard let port else { throw BenchError(description: "the receiver did not listen") }

        let secret = "bench-iaptic-secret-0123456789abcdef"
        let config = """
            http: { host: 127.0.0.1, port: 0 }
            store: { url: "sqlite:\(directory)/store.sqlite" }
            log: { level: error }
            sources: { iaptic: { apps: [{ name: shop, secrets: [\(secret)] }] } }
            webhooks:
              allowLoopback: true
              caFile: \(chain.caFile)
              endpoints:
                - { name: bench, url: "https://localhost:\(port)/hooks", secrets: [\(WebhookSecret.generate())] }
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/tollgate.yaml"))
        let dev = Process()
        dev.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        dev.arguments = ["-c", String(devCPU), URL(fileURLWithPath: tollgate).standardizedFileURL.path, "dev", "--config", directory + "/tollgate.yaml"]
        dev.currentDirectoryURL = URL(fileURLWithPath: directory)
        _ = FileManager.default.createFile(atPath: directory + "/dev.out", contents: nil)
        dev.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/dev.out"))
        _ = FileManager.default.createFile(atPath: directory + "/dev.err", contents: nil)
        dev.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/dev.err"))
        try dev.run()
        defer { kill(dev.processIdentifier, SIGKILL) }
        var base: String?
        for _ in 0..<3_000 where base == nil {
            try await Task.sleep(for: .milliseconds(10))
            let output = (try? String(contentsOfFile: directory + "/dev.out", encoding: .utf8)) ?? ""
            if let line = output.split(separator: "\n").first(where: { $0.hasPrefix("gateway: listening on http://") }) {
                base = "http://" + line.dropFirst("gateway: listening on http://".count).prefix { $0 != " " }
            }
        }
        guard let gateway = base else {
            let errors = (try? String(contentsOfFile: directory + "/dev.err", encoding: .utf8)) ?? ""
            throw BenchError(description: "tollgate dev did not start: \(errors.suffix(2_000))")
        }
        let fetcher = HTTPClientFetcher()
        let send: @Sendable (Int) async -> Bool = { user in
            let body = #"{"type":"purchases.updated","password":"\#(secret)","applicationUsername":"bench-\#(user)","#
                + #""notification":{"id":"ntf-\#(user)","reason":"PURCHASED","date":"2026-11-27T00:00:00.000Z"},"#
                + #""purchases":{"premium":{"purchaseId":"sub-\#(user)","transactionId":"t-\#(user)","productId":"premium","platform":"apple","#
                + #""purchaseDate":"2026-11-01T00:00:00.000Z","expirationDate":"2099-01-01T00:00:00.000Z","isExpired":false}}}"#
            let answer = try? await fetcher.fetch(HTTPFetchRequest(url: gateway + "/webhooks/iaptic", method: "POST",
                                                                   headers: [("Content-Type", "application/json")], body: Array(body.utf8),
                                                                   timeout: .seconds(30)))
            return answer?.status == 200
        }
        // Ready, warm: a first callback delivered end to end.
        var warm = false
        for _ in 0..<300 where !warm {
            warm = await send(-1)
            if warm { warm = try await eventuallyArrived(arrivals, [-1], within: .seconds(5)) }
            if !warm { try await Task.sleep(for: .milliseconds(100)) }
        }
        guard warm else { throw BenchError(description: "no delivery arrived") }

        let count = Int(rate * seconds)
        let accepted = Arrivals()
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for user in 0..<count {
                let due = start + .nanoseconds(Int64(Double(user) / rate * 1e9))
                try? await Task.sleep(until: due)
                group.addTask {
                    if await send(user) {
                        let now = ContinuousClock.now
                        accepted.seen.withLock { $0[user] = now }
                    }
                }
            }
        }
        let sent = accepted.seen.withLock { $0 }
        _ = try await eventuallyArrived(arrivals, Array(sent.keys), within: .seconds(120))
        let received = arrivals.seen.withLock { $0 }
        var latencies: [Double] = []
        for (user, okAt) in sent {
            guard let arrived = received[user] else { continue }
            let d = arrived - okAt
            latencies.append(Double(d.components.seconds) * 1_000 + Double(d.components.attoseconds) / 1e15)
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        return Latency(rate: rate, sent: sent.count, received: latencies.count, p50Ms: percentile(0.5), p99Ms: percentile(0.99))
    }

    /// Whether every one of `users` arrived within `within`.
    static func eventuallyArrived(_ arrivals: Arrivals, _ users: [Int],
                                  within: Duration = .seconds(30)) async throws -> Bool {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            if arrivals.seen.withLock({ seen in users.allSatisfy { seen[$0] != nil } }) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// The n of the entitlement's `"user":"bench-n"` in a delivery's body.
    static func userNumber(in body: [UInt8]) -> Int? {
        let marker = Array(#""user":"bench-"#.utf8)
        guard let range = body.firstRange(of: marker) else { return nil }
        var index = range.upperBound
        var negative = false
        if index < body.count, body[index] == UInt8(ascii: "-") { negative = true; index += 1 }
        var value = 0
        var digits = 0
        while index < body.count, (48...57).contains(body[index]) {
            value = value * 10 + Int(body[index] - 48)
            index += 1
            digits += 1
        }
        return digits == 0 ? nil : (negative ? -value : value)
    }

    /// This process's CPU time, user and system.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// A time per user: when its callback was answered 2xx, or its delivery first arrived.
final class Arrivals: Sendable {
    let seen = Mutex<[Int: ContinuousClock.Instant]>([:])
}
