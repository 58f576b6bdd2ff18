import Events
import Kafka
import Logging
import ServiceHost
import ServiceLifecycle
import Store
import Verifiers
import Webhooks

/// Reads every raw topic (the deliveries the gateway verified) in a consumer group of its own and
/// records each for the forward webhook endpoints that take it, then commits: a crash reads the batch
/// again, and the messages' ids make that harmless. Replicas share the partitions; the dispatcher
/// delivers what any of them recorded.
struct ForwardingService: Service {
    let config: ConsumerConfig
    /// Each raw topic's sender.
    let senders: [String: SourceName]
    let forwarding: WebhookForwarding
    let metrics: WorkerMetrics
    let logger: Logger
    let clock: @Sendable () -> Int64

    func run() async throws {
        // Kept in the store before the first record is read: a new endpoint starts with what arrives after it.
        guard let since = await untilStored("webhook forwarding cannot reach the store; trying again", logger: logger, {
            try await forwarding.start(nowMs: clock())
        }) else { return }
        try await runRecordingConsumer(config, topics: senders.keys.sorted(), role: "webhook forwarding", metrics: metrics, logger: logger) {
            [senders, forwarding, clock] records in
            let deliveries = records.compactMap { record -> ForwardedDelivery? in
                // An Iaptic record without the app the gateway matched was written before the callback's
                // password was removed from what is kept: it would forward the app's shared secret.
                if senders[record.topic] == .iaptic, record.headers.string(RawRecordHeaders.authenticatedScope) == nil { return nil }
                return senders[record.topic].map {
                    ForwardedDelivery(sender: $0, key: record.key, body: record.value,
                                      recordHeaders: record.headers.map { ($0.name, $0.stringValue) }, timestampMs: record.timestampMs)
                }
            }
            try await forwarding.record(deliveries, since: since, nowMs: clock())
        }
    }
}
