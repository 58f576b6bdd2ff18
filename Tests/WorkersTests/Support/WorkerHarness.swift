import Config
import Console
import Entitlements
import Events
import Foundation
import Gateway
import Kafka
import Logging
import Merchant
import ProviderAPIs
import Store
import Synchronization
import TestSupport
import Verifiers
import Webhooks
import Workers

/// An in-process mock cluster holding every topic the workers use (3 partitions each), a producer for
/// the test's own records (published as the gateway publishes them), and readers for what the workers
/// write. Worker instances run with `withWorkers`, so they are stopped however the test ends.
final class WorkerHarness: Sendable {
    static let consumerGroup = "tollgate-workers-e2e"

    let cluster: MockCluster
    let topics: TopicNames
    let client: KafkaClientConfig
    let producer: KafkaProducer
    let logger: Logger

    /// Retry tiers short enough for a test to wait for them.
    /// `logGuard`: the topics it guards, and its budget, as `tollgate dev` guards its embedded broker.
    init(retryDelaysMs: [Int] = [300, 600], partitions: Int = 3, logGuard: ((TopicNames) -> MockLogGuard)? = nil) throws {
        cluster = try MockCluster()
        topics = TopicNames(retryDelaysMs: retryDelaysMs, sources: SenderCatalog.standard.names)
        for topic in topics.all { try cluster.createTopic(topic.name, partitions: partitions) }
        client = KafkaClientConfig(bootstrapServers: cluster.bootstrapServers, clientId: "tollgate-e2e", mockLogGuard: logGuard?(topics))
        producer = try KafkaProducer(config: ProducerConfig(client: client))
        var logger = Logger(label: "workers-e2e")
        // The tests provoke failures the workers log loudly; TOLLGATE_TEST_LOG_LEVEL=debug shows them.
        logger.logLevel = ProcessInfo.processInfo.environment["TOLLGATE_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        self.logger = logger
    }

    /// Runs `body` with the harness, then closes its producer.
    static func with<T: Sendable>(retryDelaysMs: [Int] = [300, 600], logGuard: ((TopicNames) -> MockLogGuard)? = nil,
                                  _ body: (WorkerHarness) async throws -> T) async throws -> T {
        let harness = try WorkerHarness(retryDelaysMs: retryDelaysMs, logGuard: logGuard)
        let result: Result<T, any Error>
        do { result = .success(try await body(harness)) } catch { result = .failure(error) }
        // Closing joins the producer's worker thread: not on the pool.
        await offPool { harness.producer.close() }
        return try result.get()
    }

    /// Runs `body` beside one worker instance on `store`, then shuts the instance down gracefully.
    func withWorkers<T: Sendable>(store: EntitlementStore, expiryPublishDelayMs: Int = 60_000,
                                  clock: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
                                  consumption: ConsumptionAnswering? = nil, playAPI: GooglePlayEnricher? = nil,
                                  purchases: EntitlementWorkers.PurchasesSetup = .init(verifiers: []), apiTokens: [APIToken] = [],
                                  sileo: [SileoVendor] = [], sileoCheckouts: (any CheckoutStarting)? = nil, checkouts: CheckoutSetup? = nil, ownServer: Bool = false, serverPort: Int = 0,
                                  merchantAPI: MerchantAPISetup = MerchantAPISetup(), refundReviews: RefundReviewSetup? = nil,
                                  appAccountTokens: AppAccountTokenSetup? = nil, console: ConsoleSetup? = nil, webhooks: WebhookSetup? = nil,
                                  senderSettings: SourcesSettings? = nil,
                                  _ body: (RunningWorkers) async throws -> T) async throws -> T {
        let workers = try RunningWorkers(harness: self, store: store, expiryPublishDelayMs: expiryPublishDelayMs, clock: clock,
                                         consumption: consumption, playAPI: playAPI, purchases: purchases, apiTokens: apiTokens,
                                         sileo: sileo, sileoCheckouts: sileoCheckouts, checkouts: checkouts, ownServer: ownServer, serverPort: serverPort,
                                         merchantAPI: merchantAPI, refundReviews: refundReviews, appAccountTokens: appAccountTokens,
                                         console: console, webhooks: webhooks, senderSettings: senderSettings)
        let result: Result<T, any Error>
        do { result = .success(try await body(workers)) } catch { result = .failure(error) }
        let stopped: Result<Void, any Error>
        do { try await workers.stop(); stopped = .success(()) } catch { stopped = .failure(error) }
        let value = try result.get()
        try stopped.get()
        return value
    }

    // MARK: Publishing

    /// Publishes `event` as the gateway does (CloudEvents binary mode, keyed by subject).
    @discardableResult
    func publish(_ event: NormalizedEvent) async throws -> KafkaDelivery {
        try await producer.send(DeliveryRecordBuilder.eventRecord(event, topic: topics.events))
    }

    /// Publishes `events` concurrently: only for events of different subjects, whose order does not matter.
    @discardableResult
    func publishAll(_ events: [NormalizedEvent]) async throws -> [KafkaDelivery] {
        try await producer.sendAll(events.map { DeliveryRecordBuilder.eventRecord($0, topic: topics.events) })
    }

    // MARK: Reading

    /// Every record on `topic` now, each partition in offset order.
    func records(_ topic: String) async throws -> [KafkaRecord] {
        let reader = try TopicReader(client: client, topic: topic)
        let result: Result<[KafkaRecord], any Error>
        do { result = .success(try await read(reader)) } catch { result = .failure(error) }
        await reader.close()
        return try result.get()
    }

    /// The records on `topic` once it holds at least `count`.
    func records(_ topic: String, atLeast count: Int, timeout: Duration = .seconds(60)) async throws -> [KafkaRecord] {
        let reader = try TopicReader(client: client, topic: topic)
        let result: Result<[KafkaRecord], any Error>
        do {
            // Watermarks are cheap to ask for: read only once they show enough records.
            try await waitUntil("\(count) records on \(topic)", timeout: timeout, every: .milliseconds(50)) {
                var total: Int64 = 0
                for partition in try await reader.partitions() {
                    let marks = try await reader.watermarks(partition: partition)
                    total += marks.high - marks.low
                }
                return total >= count
            }
            result = .success(try await read(reader))
        } catch {
            result = .failure(error)
        }
        await reader.close()
        return try result.get()
    }

    private func read(_ reader: TopicReader) async throws -> [KafkaRecord] {
        let collected = Mutex<[KafkaRecord]>([])
        try await reader.read(stallTimeoutMs: 10_000) { record in
            collected.withLock { $0.append(record) }
            return true
        }
        return collected.withLock { $0 }
    }
}
