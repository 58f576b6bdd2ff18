import Entitlements
import Events
import Kafka
import Logging
import ServiceLifecycle

/// The consuming half of Tollgate, assembled: the projection of `tollgate.events`, the retry tiers
/// and the outbox relay, sharing one store and one producer (retries, dead letters, entitlements).
public struct EntitlementWorkers: Sendable {
    public let store: EntitlementStore
    public let producer: KafkaProducer
    public let services: [any Service]

    public init(client: KafkaClientConfig, topics: TopicNames, consumerGroup: String, ackTimeoutMs: Int = 5_000,
                store: EntitlementStore, playAPI: GooglePlayEnricher? = nil, metrics: WorkerMetrics, logger: Logger) throws(KafkaError) {
        producer = try KafkaProducer(config: ProducerConfig(client: client, deliveryTimeoutMs: ackTimeoutMs))
        self.store = store
        let processor = EventProcessor(store: store, enricher: playAPI, metrics: metrics, logger: logger)
        let handler = RecordHandler(processor: processor, router: FailureRouter(topics: topics, consumerGroup: consumerGroup),
                                    producer: producer, metrics: metrics, logger: logger)
        let consumer = ConsumerConfig(client: client, groupId: consumerGroup)
        services = [
            ProjectionService(config: consumer, topic: topics.events, handler: handler, logger: logger),
            RetryService(config: consumer, topics: topics.retryDelaysMs.map(topics.retry(delayMs:)), handler: handler, logger: logger),
            OutboxRelay(store: store, producer: producer, topic: topics.entitlements, metrics: metrics, logger: logger),
        ]
    }
}
