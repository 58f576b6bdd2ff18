import Config
import Events
import Foundation
import Gateway
import Kafka
import Logging
import ServiceLifecycle
import TestSupport
import Testing
import Verifiers

/// A real gateway on a free port, publishing to its own in-process mock cluster.
final class GatewayHarness: Sendable {
    let cluster: MockCluster
    let producer: KafkaProducer
    let metrics: GatewayMetrics
    let topics = TopicNames()
    let port: Int
    let client: RawHTTPClient
    let spool: DeliverySpool?
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    static let secret = "harness-secret"

    /// `spool`: deliveries Kafka does not acknowledge within `ackTimeoutMs` go to a spool file there,
    /// relayed as in `tollgate serve`; nil answers them 503. `brokers`/`partitions` shape the cluster.
    init(maxBodyBytes: Int = 262_144, ackTimeoutMs: Int = 5_000, apple: AppleSettings = AppleSettings(),
         publicPathPrefix: String = "", fetcher: (any HTTPFetcher)? = nil, limits: LimitSettings = LimitSettings(),
         brokers: Int = 1, partitions: Int = 1, spool spoolOptions: (path: String, maxBytes: Int)? = nil,
         configure: (inout SourcesSettings) -> Void = { _ in },
         configureHTTP: (inout HTTPSettings) -> Void = { _ in }) async throws {
        cluster = try MockCluster(brokers: brokers)
        for topic in topics.all { try cluster.createTopic(topic.name, partitions: partitions) }
        producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers),
                                                            deliveryTimeoutMs: ackTimeoutMs))
        var sources = SourcesSettings()
        sources.iaptic.apps = [IapticSettings.App(name: "shop", secrets: [Self.secret])]
        sources.apple = apple
        configure(&sources)
        var http = HTTPSettings()
        http.host = "127.0.0.1"
        http.port = 0
        http.maxBodyBytes = maxBodyBytes
        http.publicPathPrefix = publicPathPrefix
        configureHTTP(&http)
        metrics = GatewayMetrics()
        var logger = Logger(label: "gateway-test")
        logger.logLevel = .warning
        let spool = try await spoolOptions.asyncMap { options in
            try await DeliverySpool.open(path: options.path, maxBytes: options.maxBytes, logger: logger)
        }
        self.spool = spool
        let writer = DeliveryWriter(producer: producer, records: DeliveryRecordBuilder(topics: topics), spool: spool,
                                    recent: RecentDeliveries(window: .seconds(600), capacity: 10_000), logger: logger)
        let server = GatewayServer(settings: http, registry: try SourceRegistry(settings: sources, fetcher: fetcher),
                                   writer: writer, metrics: metrics, logger: logger, limits: limits)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = server.makeApplication { port in portContinuation.yield(port) }
        var services: [any Service] = [app]
        if let spool {
            services = [SpoolService(spool: spool), SpoolRelay(spool: spool, producer: producer, metrics: metrics, logger: logger), app]
        }
        group = ServiceGroup(services: services, logger: logger)
        running = Task { [group] in try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw ClientError("server did not start") }
        self.port = port
        client = RawHTTPClient(port: port)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await running.result
        producer.close()
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

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}

enum Bodies {
    static func renewal(password: String = GatewayHarness.secret, notificationId: String = "n-100") -> String {
        #"{"type":"purchases.updated","password":"\#(password)","applicationUsername":"u-1","notification":{"id":"\#(notificationId)","reason":"RENEWED","purchaseId":"apple:1"},"purchases":{"apple:m":{"purchaseId":"apple:1","productId":"apple:m","expirationDate":"2027-01-01T00:00:00Z","renewalIntent":"Renew"}}}"#
    }
}
