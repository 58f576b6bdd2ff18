import Config
import Events
import Hummingbird
import Kafka
import Logging
import Outbound
import ServiceHost
import ServiceLifecycle
import Spool
import Toolkit
import Verifiers

/// The gateway process, composed from its configuration: the spool, the producer, the relay, the
/// HTTP server and readiness, run as one ServiceGroup. `tollgate serve` runs it alone, `tollgate dev`
/// beside the workers, and the gateway tests start it as it is.
public struct GatewayProcess: Service {
    public let producer: KafkaProducer
    public let spool: DeliverySpool?
    public let readiness: Readiness
    public let metrics: GatewayMetrics
    /// The Prometheus exposition `/metrics` answers, its gauges brought up to date first.
    public let exposition: @Sendable () -> String
    /// What graceful shutdown does, in order (docs/durability.md).
    public let stopOrder: StopOrder
    private let logger: Logger

    /// Opens the spool and the producer and builds the server. `kafka`: the cluster to publish to (its
    /// brokers come from `kafka.brokers` or the embedded broker); `fetcher`: what senders fetch key sets
    /// with; `additionalRoutes`: served beside the webhooks (the entitlement API in `tollgate dev`);
    /// `onListening`: receives the bound port once the listener is open; `onMetricsListening`: the same
    /// for `/metrics`'s own listener when `metrics.port` is set; `senders`: the catalog the
    /// configuration was read with (tests add senders of their own).
    public init(config: TollgateConfig, kafka: KafkaClientConfig, metrics: GatewayMetrics, fetcher: (any HTTPFetcher)? = HTTPClientFetcher(),
                logger: Logger, additionalRoutes: RouteGroup = .none, senders: SenderCatalog = .standard,
                onMetricsListening: @escaping @Sendable (Int) async -> Void = { _ in },
                onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let registry = try senders.registry(config.sources, fetcher: fetcher)
        for warning in senders.startupWarnings(config.sources, process: .gateway) {
            logger.warning("\(warning.message)", metadata: ["key": "\(warning.key)"])
        }
        var spool: DeliverySpool?
        if config.spool.enabled {
            spool = try await DeliverySpool.open(path: config.spool.path, maxBytes: config.spool.maxBytes, logger: logger)
        } else {
            logger.warning("spool disabled: deliveries Kafka does not acknowledge in time are answered 503", metadata: ["key": "spool.enabled"])
        }
        let producer = try KafkaProducer(config: ProducerConfig(client: kafka, deliveryTimeoutMs: config.kafka.ackTimeoutMs))
        let topics = TopicNames(prefix: config.kafka.topicPrefix, retryDelaysMs: config.kafka.retryDelaysMs, sources: registry.names)
        let writer = DeliveryWriter(producer: producer, records: DeliveryRecordBuilder(topics: topics, senders: registry), spool: spool,
                                    recent: RecentDeliveries(window: .seconds(config.dedup.windowSeconds), capacity: config.dedup.maxEntries),
                                    logger: logger)
        // A delivery's records take about twice its body in the spool (raw body, events, base64).
        let readiness = Readiness(producer: producer, spool: spool, spoolReserve: 2 * config.http.maxBodyBytes, registry: registry,
                                  topics: registry.names.map(topics.raw) + [topics.events, topics.quarantine],
                                  drainDelay: .milliseconds(config.shutdown.drainDelayMs))
        let server = GatewayServer(settings: config.http, registry: registry, writer: writer, readiness: readiness, metrics: metrics,
                                   logger: logger, limits: config.limits, additionalRoutes: additionalRoutes,
                                   servesMetrics: config.metrics.port == nil)
        server.logLimits()
        metrics.watchSilence(senders: registry.names.map(\.rawValue),
                             thresholds: Dictionary(uniqueKeysWithValues: config.silence.afterSeconds.map { ($0.key.rawValue, $0.value) }),
                             nowSeconds: Double(Timestamp.now.millisecondsSince1970) / 1000)

        var steps: [StopOrder.Step] = [
            // `/readyz` fails, then `shutdown.drainDelayMs` passes while load balancers stop sending.
            .stop("readiness", readiness),
            // The listener closes; requests in flight finish, publishing or spooling their deliveries.
            .stop("http server", server.makeApplication(onListening: onListening)),
        ]
        if let port = config.metrics.port {
            // Scraped until the webhooks are done; stops before the relay's last pass.
            let metricsServer = MetricsServer(host: config.metrics.host ?? config.http.host, port: port, exposition: server.exposition,
                                              logger: logger)
            steps.append(.stop("metrics server", metricsServer.makeApplication(onListening: onMetricsListening)))
        }
        if let spool {
            // One last pass publishes what the final requests spooled.
            steps.append(.stop("spool relay", SpoolRelay(spool: spool, producer: producer, metrics: metrics, logger: logger)))
        }
        steps.append(.close("kafka producer") { await producer.drainAndClose(flushTimeoutMs: 10_000) })
        if let spool { steps.append(.close("spool") { await spool.close() }) }

        self.producer = producer
        self.spool = spool
        self.readiness = readiness
        self.metrics = metrics
        exposition = server.exposition
        self.stopOrder = StopOrder(steps)
        self.logger = logger
    }

    public func run() async throws {
        try await stopOrder.serviceGroup(logger: logger).run()
    }
}
