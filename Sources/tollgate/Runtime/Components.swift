import Config
import Events
import Gateway
import Kafka
import Logging
import Outbound
import Hummingbird
import ServiceLifecycle
import Store
import Verifiers
import Workers

/// Builds the long-lived services shared by `dev`, `serve` and `work`.
enum Components {
    /// The spool, the producer, the relay, the HTTP server and readiness, in start order (they stop
    /// in reverse: readiness fails first, the server finishes its requests, the relay publishes what
    /// it can, the producer flushes, the spool closes).
    static func gateway(config: TollgateConfig, brokers: String, logger: Logger,
                        additionalRoutes: @escaping @Sendable (Router<BasicRequestContext>) -> Void = { _ in },
                        onListening: @escaping @Sendable (Int) async -> Void) async throws -> [any Service] {
        let registry = try SourceRegistry(settings: config.sources, fetcher: URLSessionFetcher())
        if config.sources.iaptic.apps.isEmpty {
            logger.warning("no Iaptic apps configured: every Iaptic delivery will be refused", metadata: ["key": "sources.iaptic.apps"])
        }
        var spool: DeliverySpool?
        if config.spool.enabled {
            spool = try await DeliverySpool.open(path: config.spool.path, maxBytes: config.spool.maxBytes, logger: logger)
        } else {
            logger.warning("spool disabled: deliveries Kafka does not acknowledge in time are answered 503", metadata: ["key": "spool.enabled"])
        }
        let producer = try KafkaProducer(config: ProducerConfig(
            client: config.kafka.client(brokers: brokers), deliveryTimeoutMs: config.kafka.ackTimeoutMs))
        let metrics = GatewayMetrics(registry: ProcessMetrics.registry)
        let writer = DeliveryWriter(producer: producer, records: DeliveryRecordBuilder(topics: config.kafka.topicNames), spool: spool,
                                    recent: RecentDeliveries(window: .seconds(config.dedup.windowSeconds), capacity: config.dedup.maxEntries),
                                    logger: logger)
        let server = GatewayServer(settings: config.http, registry: registry, writer: writer, metrics: metrics, logger: logger,
                                   limits: config.limits, additionalRoutes: additionalRoutes)
        server.logLimits()
        var services: [any Service] = []
        if let spool { services.append(SpoolService(spool: spool)) }
        services.append(producer)
        if let spool { services.append(SpoolRelay(spool: spool, producer: producer, metrics: metrics, logger: logger)) }
        services.append(server.makeApplication(onListening: onListening))
        services.append(ReadinessService(readiness: server.readiness, drainDelay: .milliseconds(config.shutdown.drainDelayMs)))
        return services
    }

    /// The workers: projection, retry tiers and outbox relay over the configured store, and the
    /// entitlement API (served by the caller: the gateway's server in `dev`, the workers' own in `work`).
    static func workers(config: TollgateConfig, brokers: String, logger: Logger) async throws -> (services: [any Service], api: EntitlementAPI, store: EntitlementStore) {
        let metrics = WorkerMetrics(factory: ProcessMetrics.factory)
        let store = try await EntitlementStore.open(url: config.store.url, logger: logger)
        logger.info("entitlement store open", metadata: ["store": .string(store.database.redactedURL)])
        if config.api.tokens.isEmpty {
            logger.warning("no api.tokens configured: the entitlement API refuses every call", metadata: ["key": "api.tokens"])
        }
        let enricher = try GooglePlayEnricher(settings: config.sources.google.playApi, fetcher: URLSessionFetcher(), logger: logger)
        if enricher == nil, !config.sources.google.packages.isEmpty {
            logger.warning("no Play Developer API credentials: Google events are applied without the purchase state Google keeps",
                           metadata: ["key": "sources.google.playApi.credentialsFile"])
        }
        let workers = try EntitlementWorkers(client: config.kafka.client(brokers: brokers), topics: config.kafka.topicNames,
                                             consumerGroup: config.kafka.consumerGroup, ackTimeoutMs: config.kafka.ackTimeoutMs,
                                             store: store, playAPI: enricher, metrics: metrics, logger: logger)
        return ([workers.producer as any Service] + workers.services,
                EntitlementAPI(store: store, tokens: config.api.tokens, logger: logger), store)
    }

    /// Runs the services until SIGTERM or SIGINT, then shuts them down gracefully within
    /// `shutdown.gracePeriodMs`; a second signal or the end of the period exits at once.
    static func run(_ services: [any Service], shutdown: ShutdownSettings, logger: Logger) async throws {
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            logger: logger))
        let signals = ShutdownSignals(gracePeriod: .milliseconds(shutdown.gracePeriodMs), logger: logger) {
            await group.triggerGracefulShutdown()
        }
        try await group.run()
        signals.stop()
    }
}
