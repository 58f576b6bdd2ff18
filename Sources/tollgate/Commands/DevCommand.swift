import ArgumentParser
import ServiceHost
import Gateway
import Kafka
import Outbound
import Synchronization
import Workers

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Everything in one process for a laptop: embedded broker, gateway and workers.",
        discussion: """
            With kafka.brokers unset, the broker is embedded (librdkafka's mock cluster): it keeps everything in \
            memory, at most about 5 MiB or 100,000 message sets a partition, and beyond that drops a partition's \
            oldest records whether or not they were consumed. What the workers have not applied stays: once a \
            partition of tollgate.events holds about 4 MiB of it (or a retry tier does, which stops the projection \
            first), the gateway spools deliveries, then answers 503 with Retry-After, and /readyz says why. The \
            raw topics and the dead letters keep \
            only the newest 5 MiB a partition, and everything is gone when the process stops. For development \
            and small single-machine trials; set kafka.brokers (TOLLGATE_KAFKA_BROKERS) to use a real cluster \
            (docs/deploying.md, section 4; docs/durability.md, the embedded broker).
            """)

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Run the reconciliations once at start, instead of an interval after they last moved a checkpoint.")
    var reconcileNow = false

    @Option(help: "Where to write the embedded broker's bootstrap servers.")
    var bootstrapFile = ".tollgate/bootstrap"

    func run() async throws {
        let config = try options.load()
        let logger = LoggingSetup.bootstrap(config.log)
        var cluster: MockCluster?
        let brokers: String
        if let configured = config.kafka.brokers {
            brokers = configured
        } else {
            let embedded = try EmbeddedBroker.start(brokers: 1, topics: config.topicNames)
            try EmbeddedBroker.writeBootstrap(embedded.bootstrapServers, to: bootstrapFile)
            cluster = embedded
            brokers = embedded.bootstrapServers
            Output.line("kafka: embedded broker at \(brokers) (written to \(bootstrapFile))")
        }
        let host = config.http.host
        let metricsHost = config.metrics.host ?? host
        var kafka = config.kafka.client(brokers: brokers)
        if cluster != nil {
            // What the workers have yet to apply stays on the embedded broker: the gateway spools or answers 503 first.
            let topics = config.topicNames
            kafka.mockLogGuard = MockLogGuard(topics: Set([topics.events] + topics.retryDelaysMs.map(topics.retry)))
        }
        // The console's overview reads the gateway's /metrics in process, once the gateway exists (it is made second).
        let gatewayExposition = Mutex<(@Sendable () -> String)?>(nil)
        let workers = try await EntitlementWorkers.open(config: config, kafka: kafka, metrics: WorkerMetrics(factory: ProcessMetrics.factory),
                                                        playAPIFetcher: HTTPClientFetcher(), listener: .elsewhere, reconcileNow: reconcileNow,
                                                        localMetrics: { gatewayExposition.withLock { $0 }?() ?? ProcessMetrics.registry.emitToString() },
                                                        logger: logger)
        let gateway = try await GatewayProcess(config: config, kafka: kafka, metrics: GatewayMetrics(registry: ProcessMetrics.registry),
                                               logger: logger, additionalRoutes: workers.routes, onMetricsListening: { port in
            Output.line("metrics: listening on http://\(metricsHost):\(port)/metrics")
        }) { port in
            Output.line("gateway: listening on http://\(host):\(port) (entitlement API: /v1/users/{user}/entitlements)")
        }
        gatewayExposition.withLock { $0 = gateway.exposition }
        Output.line("store: \(workers.store.database.redactedURL)")
        // The gateway stops taking deliveries before the consumers stop.
        try await ProcessRunner.run(StopOrder([.stop("gateway", gateway), .stop("workers", workers)]),
                                    shutdown: config.shutdown, logger: logger)
        withExtendedLifetime(cluster) {}
    }
}
