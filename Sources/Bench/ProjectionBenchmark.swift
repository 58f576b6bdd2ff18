import Entitlements
import Events
import Foundation
import Gateway
import Kafka
import Logging
import ServiceLifecycle
import Store
import Verifiers
import Workers

/// The workers' projection throughput with the broker in the loop: events already on `tollgate.events`
/// (an in-process mock cluster, the embedded broker), consumed in the group, applied to a fresh store,
/// offsets committed; timed from start until the store holds every event.
struct ProjectionBenchmark {
    struct Result {
        var backend: String
        var events: Int
        var seconds: Double
        var perSecond: Double { Double(events) / seconds }
    }

    let events: Int

    func run(storeURL: String, backend: String) async throws -> Result {
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        let cluster = try MockCluster(brokers: 1)
        let topics = TopicNames(sources: SenderCatalog.standard.names)
        for topic in topics.all { try cluster.createTopic(topic.name, partitions: 3) }
        let client = KafkaClientConfig(bootstrapServers: cluster.bootstrapServers)
        try await produce(client: client, topic: topics.events)

        let store = try await EntitlementStore.open(url: storeURL, logger: logger)
        let workers = try EntitlementWorkers(client: client, topics: topics, consumerGroup: "bench-\(UUID().uuidString)",
                                             store: store, metrics: WorkerMetrics(), logger: logger)
        let group = ServiceGroup(services: [workers], logger: logger)
        let running = Task { try await group.run() }
        // The clock starts with the first applied batch: joining the consumer group takes seconds
        // on the embedded broker and is not projection work.
        var first = 0
        while first == 0 {
            try await Task.sleep(for: .milliseconds(5))
            first = try await processed(store)
        }
        let started = ContinuousClock.now
        while try await processed(store) < events {
            try await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = ContinuousClock.now - started
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        workers.producer.close()
        await store.close()
        withExtendedLifetime(cluster) {}
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Result(backend: backend, events: events - first, seconds: seconds)
    }

    /// Realistic traffic: each subscription starts and renews three times, one user each.
    private func produce(client: KafkaClientConfig, topic: String) async throws {
        let producer = try KafkaProducer(config: ProducerConfig(client: client, lingerMs: 5))
        defer { producer.close() }
        let base = Timestamp.now.millisecondsSince1970 - 100 * 86_400_000
        var batch: [KafkaMessage] = []
        for index in 0..<events {
            let subscription = index / 4, step = Int64(index % 4)
            let at = base + step * 30 * 86_400_000
            let event = NormalizedEvent(
                id: "bench:\(index)", type: step == 0 ? .subscriptionStarted : .subscriptionRenewed, source: "/apple/com.example.bench",
                environment: .production, app: "com.example.bench", subject: "otx-\(subscription)",
                occurredAt: Timestamp(millisecondsSince1970: at).rfc3339, receivedAt: Timestamp(millisecondsSince1970: at).rfc3339,
                user: "user-\(subscription)", product: "pro.monthly",
                transaction: NormalizedEvent.Transaction(expiresAt: Timestamp(millisecondsSince1970: at + 30 * 86_400_000).rfc3339),
                sourceType: "DID_RENEW")
            batch.append(DeliveryRecordBuilder.eventRecord(event, topic: topic))
            if batch.count == 1_000 {
                _ = try await producer.sendAll(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { _ = try await producer.sendAll(batch) }
    }

    private func processed(_ store: EntitlementStore) async throws -> Int {
        try await store.database.read { connection throws(StoreError) in
            Int(try connection.query("SELECT COUNT(*) AS n FROM processed_events", []).first?.int("n") ?? 0)
        }
    }
}
