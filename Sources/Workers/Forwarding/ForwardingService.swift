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

    /// `work`'s result once the store answers, trying again with the jobs' backoff (one warning); nil when
    /// the task is cancelled first.
    static func untilStored<T: Sendable>(_ warning: Logger.Message, logger: Logger, _ work: () async throws -> T) async -> T? {
        var failures = 0
        while true {
            do { return try await work() } catch {
                failures += 1
                if failures == 1 { logger.warning(warning, metadata: ["error": "\(error)"]) }
                do { try await Task.sleep(for: PeriodicJob.backoff(afterFailures: failures)) } catch { return nil }
            }
        }
    }

    func run() async throws {
        // Kept in the store before the first record is read: a new endpoint starts with what arrives after it.
        guard let since = await Self.untilStored("webhook forwarding cannot reach the store; trying again", logger: logger, {
            try await forwarding.start(nowMs: clock())
        }) else { return }
        try await runConsumer(config, topics: senders.keys.sorted(), role: "webhook forwarding", metrics: metrics, logger: logger) {
            [senders, forwarding, logger, clock] consumer, lagReporter in
            var batches = consumer.batches(maxRecords: 500, idleTimeoutMs: 500).makeAsyncIterator()
            while let records = try await batches.next(), !Task.isCancelled {
                if !records.isEmpty {
                    let deliveries = records.compactMap { record -> ForwardedDelivery? in
                        // An Iaptic record without the app the gateway matched was written before the callback's
                        // password was removed from what is kept: it would forward the app's shared secret.
                        if senders[record.topic] == .iaptic, record.headers.string(RawRecordHeaders.authenticatedScope) == nil { return nil }
                        return senders[record.topic].map {
                            ForwardedDelivery(sender: $0, key: record.key, body: record.value,
                                              recordHeaders: record.headers.map { ($0.name, $0.stringValue) }, timestampMs: record.timestampMs)
                        }
                    }
                    // Not committed unless recorded: the store is waited for (a shutdown leaves the batch to be read again).
                    guard await Self.untilStored("webhook forwarding cannot record; trying again", logger: logger, {
                        try await forwarding.record(deliveries, since: since, nowMs: clock())
                    }) != nil else { return }
                    do { try await consumer.commitAll(records) } catch {
                        logger.warning("commit failed; the batch will be read again and recorded once", metadata: ["error": .string("\(error)")])
                    }
                }
                await lagReporter.tick()
            }
        }
    }
}
