import Config
import Events
import Gateway
import Kafka
import Logging
import Outbound
import ServiceLifecycle
import Verifiers
import Workers

/// Builds the long-lived services shared by `dev`, `serve` and `work`.
enum Components {
    /// The producer, the HTTP server and their lifecycle companions, in start order.
    static func gateway(config: TollgateConfig, brokers: String, logger: Logger,
                        onListening: @escaping @Sendable (Int) async -> Void) throws -> [any Service] {
        let registry = try SourceRegistry(settings: config.sources, fetcher: URLSessionFetcher())
        if config.sources.iaptic.apps.isEmpty {
            logger.warning("no Iaptic apps configured: every Iaptic delivery will be refused", metadata: ["key": "sources.iaptic.apps"])
        }
        let producer = try KafkaProducer(config: ProducerConfig(
            client: config.kafka.client(brokers: brokers), deliveryTimeoutMs: config.kafka.ackTimeoutMs))
        let server = GatewayServer(settings: config.http, registry: registry,
                                   publisher: EventPublisher(producer: producer, topics: config.kafka.topicNames),
                                   logger: logger)
        return [ProducerService(producer: producer), server.makeApplication(onListening: onListening),
                ReadinessService(readiness: server.readiness)]
    }

    /// The workers: for now they consume and log each event (projection arrives with the store).
    static func workers(config: TollgateConfig, brokers: String, logger: Logger) -> [any Service] {
        let consumerConfig = ConsumerConfig(client: config.kafka.client(brokers: brokers), groupId: config.kafka.consumerGroup)
        return [EventConsumer(config: consumerConfig, topics: config.kafka.topicNames, logger: logger) { event, record in
            logger.info("event consumed", metadata: [
                "ce_id": .string(event.id), "type": .string(event.type.rawValue), "subject": .string(event.subject),
                "partition": .stringConvertible(record.partition), "offset": .stringConvertible(record.offset)])
        }]
    }

    static func run(_ services: [any Service], logger: Logger) async throws {
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}
