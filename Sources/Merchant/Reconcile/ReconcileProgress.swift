import Entitlements
import Events
import Kafka

/// One scope of a reconciliation run (an app and environment, a package), as it goes.
public struct ReconcileProgress: Sendable, Equatable {
    public var scope: String
    public var pages = 0
    /// Items read: Apple notifications, Google voided purchases.
    public var items = 0
    /// Published (or, in a dry run, that would be): not processed yet.
    public var new = 0
    public var known = 0
    public var rejected = 0
    public var rateLimitWaits = 0
    /// Why the scope stopped before its end; nil when it reached it.
    public var failure: String?

    public init(scope: String) { self.scope = scope }
}

/// The step of a page both jobs share: of the events it gave, publish to `tollgate.events` those not
/// applied yet (with the ids the webhook gives them, so one the gateway also received is a
/// duplicate), unless a dry run, and count new, known and rejected items.
struct ReconcilePublisher: Sendable {
    let job: String
    let store: EntitlementStore
    /// Nil: dry runs only.
    let publisher: (any EventPublisher)?
    let metrics: MerchantMetrics

    func publishNew(_ events: [NormalizedEvent], rejected: Int, dryRun: Bool, into state: inout ReconcileProgress) async throws {
        var fresh: [NormalizedEvent] = []
        for event in events where !(try await store.hasProcessed(eventId: event.id)) { fresh.append(event) }
        state.new += fresh.count
        state.known += events.count - fresh.count
        state.rejected += rejected
        metrics.reconcileItems(job: job, outcome: "new", count: fresh.count)
        metrics.reconcileItems(job: job, outcome: "known", count: events.count - fresh.count)
        metrics.reconcileItems(job: job, outcome: "rejected", count: rejected)
        guard !dryRun, !fresh.isEmpty else { return }
        guard let publisher else { throw ReconcileStopped(message: "no Kafka producer to publish with") }
        do {
            try await publisher.publish(fresh)
        } catch {
            throw ReconcileStopped(message: "publishing to tollgate.events failed: \(error)")
        }
    }
}

/// Why a scope stopped before its end; its checkpoint stays at the last page published.
struct ReconcileStopped: Error {
    let message: String
    /// The store no longer takes the saved page token: the window is read again from its start.
    var restartsWindow = false
    /// `tollgate_reconcile_runs_total`'s outcome: `failed`, or `key_refused` when the store refused the
    /// credentials (permanent until the key is fixed).
    var outcome = "failed"
}

extension CloudEventRecord {
    /// The record the gateway would have written for `event` (`DeliveryRecordBuilder.eventRecord`).
    public static func message(_ event: NormalizedEvent, topic: String) -> KafkaMessage {
        let record = CloudEventRecord(event)
        return KafkaMessage(topic: topic, key: record.key, value: record.value,
                            headers: record.headers.map { KafkaHeader(name: $0.name, string: $0.value) })
    }
}
