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
    /// The producer, the HTTP server and their lifecycle companions, in start order.
    static func gateway(config: TollgateConfig, brokers: String, logger: Logger,
                        additionalRoutes: @escaping @Sendable (Router<BasicRequestContext>) -> Void = { _ in },
                        onListening: @escaping @Sendable (Int) async -> Void) throws -> [any Service] {
        let registry = try SourceRegistry(settings: config.sources, fetcher: URLSessionFetcher())
        if config.sources.iaptic.apps.isEmpty {
            logger.warning("no Iaptic apps configured: every Iaptic delivery will be refused", metadata: ["key": "sources.iaptic.apps"])
        }
        let producer = try KafkaProducer(config: ProducerConfig(
            client: config.kafka.client(brokers: brokers), deliveryTimeoutMs: config.kafka.ackTimeoutMs))
        let server = GatewayServer(settings: config.http, registry: registry,
                                   publisher: EventPublisher(producer: producer, topics: config.kafka.topicNames),
                                   metrics: GatewayMetrics(registry: ProcessMetrics.registry), logger: logger,
                                   limits: config.limits, additionalRoutes: additionalRoutes)
        server.logLimits()
        return [ProducerService(producer: producer), server.makeApplication(onListening: onListening),
                ReadinessService(readiness: server.readiness)]
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
        return ([ProducerService(producer: workers.producer)] + workers.services,
                EntitlementAPI(store: store, tokens: config.api.tokens, logger: logger), store)
    }

    static func run(_ services: [any Service], logger: Logger) async throws {
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}
