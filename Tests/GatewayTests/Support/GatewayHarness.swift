import Config
import Events
import Foundation
import Gateway
import Kafka
import Logging
import ServiceLifecycle
import Spool
import TestSupport
import Testing
import Toolkit
import Verifiers

/// A real gateway on a free port, publishing to its own in-process mock cluster: `GatewayProcess`, as
/// `tollgate serve` runs it, from a configuration built here.
final class GatewayHarness: Sendable {
    let cluster: MockCluster
    let producer: KafkaProducer
    let metrics: GatewayMetrics
    let topics: TopicNames
    let port: Int
    let client: RawHTTPClient
    let spool: DeliverySpool?
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    static let secret = "harness-secret"

    /// `spool`: deliveries Kafka does not acknowledge within `ackTimeoutMs` go to a spool file there,
    /// relayed as in `tollgate serve`; nil answers them 503. `brokers`/`partitions` shape the cluster.
    /// `configureAll` changes the finished configuration; `log` captures every line the gateway logs.
    /// Returns once the gateway listens and has warmed up (what `/readyz` waits for).
    init(maxBodyBytes: Int = 262_144, ackTimeoutMs: Int = 5_000, apple: AppleSettings = AppleSettings(),
         publicPathPrefix: String = "", fetcher: (any HTTPFetcher)? = nil, limits: LimitSettings = LimitSettings(),
         brokers: Int = 1, partitions: Int = 1, spool spoolOptions: (path: String, maxBytes: Int)? = nil,
         configure: (inout SourcesSettings) -> Void = { _ in },
         configureHTTP: (inout HTTPSettings) -> Void = { _ in }, senders catalog: SenderCatalog = .standard,
         configureAll: (inout TollgateConfig) -> Void = { _ in }, log: CapturedLog? = nil) async throws {
        topics = TopicNames(sources: catalog.names)
        cluster = try MockCluster(brokers: brokers)
        for topic in topics.all { try cluster.createTopic(topic.name, partitions: partitions) }
        var config = TollgateConfig()
        config.kafka.ackTimeoutMs = ackTimeoutMs
        config.sources.iaptic.apps = [IapticSettings.App(name: "shop", secrets: [Self.secret])]
        config.sources.apple = apple
        configure(&config.sources)
        config.http.host = "127.0.0.1"
        config.http.port = 0
        config.http.maxBodyBytes = maxBodyBytes
        config.http.publicPathPrefix = publicPathPrefix
        configureHTTP(&config.http)
        config.limits = limits
        config.dedup.maxEntries = 10_000
        config.spool.enabled = spoolOptions != nil
        if let spoolOptions {
            config.spool.path = spoolOptions.path
            config.spool.maxBytes = spoolOptions.maxBytes
        }
        configureAll(&config)
        var logger = log?.logger(label: "gateway-test") ?? Logger(label: "gateway-test")
        if log == nil { logger.logLevel = .warning }
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let gateway = try await GatewayProcess(config: config, kafka: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers),
                                               metrics: GatewayMetrics(), fetcher: fetcher, logger: logger, senders: catalog,
                                               onListening: { port in portContinuation.yield(port) })
        producer = gateway.producer
        metrics = gateway.metrics
        spool = gateway.spool
        group = ServiceGroup(services: [gateway], logger: logger)
        running = Task { [group] in try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw ClientError("server did not start") }
        self.port = port
        client = RawHTTPClient(port: port)
        await gateway.readiness.warmedUp()
    }

    /// A graceful shutdown, as on SIGTERM: in-flight requests finish, the relay makes its last pass,
    /// the producer flushes and closes, the spool closes.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await running.result
    }

    func postIaptic(_ body: String, contentType: String = "application/json") async throws -> RawHTTPClient.Response {
        try await client.request("POST", "/webhooks/iaptic", headers: ["Content-Type": contentType], body: body)
    }

    /// Every record currently on `topic`, read with kcat (an independent client) up to the end.
    func records(_ topic: String) async throws -> [(key: String, headers: String, value: String)] {
        let output = try await Subprocess.run("/usr/bin/kcat", ["-b", cluster.bootstrapServers, "-C", "-t", topic, "-o", "beginning",
                                                                "-e", "-q", "-f", "%k\t%h\t%s\n"]).output
        return output.split(separator: "\n").map { line in
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            return (fields[0], fields.count > 1 ? fields[1] : "", fields.count > 2 ? fields[2] : "")
        }
    }

    /// The value of one sample in `/metrics`, matching all the given labels.
    func metric(_ name: String, _ labels: [String: String]) async throws -> Double {
        let text = try await client.request("GET", "/metrics").body
        var total = 0.0
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") {
            guard let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}"),
                  let value = Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces)) else { continue }
            let labelText = line[line.index(after: open)..<close]
            var found: [String: String] = [:]
            for pair in labelText.split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { found[String(parts[0])] = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            }
            if labels.allSatisfy({ found[$0.key] == $0.value }) { total += value }
        }
        return total
    }
}

enum Bodies {
    static func renewal(password: String = GatewayHarness.secret, notificationId: String = "n-100") -> String {
        #"{"type":"purchases.updated","password":"\#(password)","applicationUsername":"u-1","notification":{"id":"\#(notificationId)","reason":"RENEWED","purchaseId":"apple:1"},"purchases":{"apple:m":{"purchaseId":"apple:1","productId":"apple:m","expirationDate":"2027-01-01T00:00:00Z","renewalIntent":"Renew"}}}"#
    }
}
