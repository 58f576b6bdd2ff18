import Config
import Entitlements
import Events
import Foundation
import Kafka
import Logging
import Merchant
import ServiceHost
import ServiceLifecycle

/// Publishes queued entitlement changes to the compacted `tollgate.entitlements` topic, in order, then
/// removes them from the outbox: at-least-once. One replica relays at a time (a lease in the store),
/// so the order per key holds with several workers.
public struct OutboxRelay: Service {
    let store: EntitlementStore
    let producer: KafkaProducer
    let topic: String
    /// Names the purchase of each change by its opaque id; the catalog names the entitlements it grants.
    let purchaseIds: PurchaseIds
    let catalog: CatalogSettings
    let metrics: WorkerMetrics
    let logger: Logger
    let holder = UUID().uuidString
    var idleInterval = Duration.milliseconds(200)
    var batchSize = 500

    init(store: EntitlementStore, producer: KafkaProducer, topic: String, purchaseIds: PurchaseIds, catalog: CatalogSettings,
         metrics: WorkerMetrics, logger: Logger) {
        self.store = store
        self.producer = producer
        self.topic = topic
        self.purchaseIds = purchaseIds
        self.catalog = catalog
        self.metrics = metrics
        self.logger = logger
    }

    public func run() async throws {
        let relay = self
        try await PeriodicJob(name: "outbox relay", interval: idleInterval, logger: logger) {
            try await relay.relayOnce() < relay.batchSize ? .idle : .moreWaiting
        }.run()
    }

    /// Publishes one batch; returns how many changes it published.
    func relayOnce() async throws -> Int {
        let now = Timestamp.now.millisecondsSince1970
        guard try await store.acquireLease("outbox-relay", holder: holder, ttlMs: 15_000, nowMs: now) else { return 0 }
        let changes = try await store.pendingChanges(limit: batchSize)
        metrics.outboxPending(changes.count)
        guard !changes.isEmpty else { return 0 }
        try await publish(changes)
        try await store.removeChanges(changes.map(\.sequence))
        metrics.outboxPublished(changes.count)
        return changes.count
    }

    /// In sequence order: `sendAll` hands records to librdkafka in order, so each key's changes land in
    /// order and the compacted topic keeps the last one.
    private func publish(_ changes: [EntitlementChange]) async throws {
        _ = try await producer.sendAll(changes.map(Self.message(topic: topic, ids: purchaseIds, catalog: catalog)))
    }

    static func message(topic: String, ids: PurchaseIds, catalog: CatalogSettings) -> (EntitlementChange) -> KafkaMessage {
        { change in
            KafkaMessage(topic: topic, key: change.entitlement.topicKey, value: EntitlementJSON.encode(change, ids: ids, catalog: catalog),
                         headers: [KafkaHeader(name: "content-type", string: "application/json"),
                                   KafkaHeader(name: "tollgate_event_id", string: change.eventId)])
        }
    }
}
