import Kafka
import Logging
import ServiceHost
import ServiceLifecycle
import Synchronization

/// The life of one worker consumer: subscribe, run `loop` until graceful shutdown cancels it, and
/// leave the group cleanly whatever happened (so its partitions move at once).
/// `lagMetric`: the gauge its lag is reported in (the console's raw delivery index has its own: its lag is no
/// entitlement's delay, and `TollgateConsumerLagHigh` reads `tollgate_consumer_lag`).
func runConsumer(_ config: ConsumerConfig, topics: [String], role: String, metrics: WorkerMetrics, logger: Logger,
                 lagMetric: String = "tollgate_consumer_lag",
                 loop: @escaping @Sendable (KafkaConsumer, LagReporter) async throws -> Void) async throws {
    let consumer = try KafkaConsumer(config: config, topics: topics)
    logger.info("\(role) started", metadata: ["topics": .string(topics.joined(separator: ",")), "group": .string(config.groupId)])
    do {
        try await cancelWhenGracefulShutdown { try await loop(consumer, LagReporter(consumer: consumer, metrics: metrics, metric: lagMetric)) }
    } catch {
        logger.error("\(role) failed", metadata: ["error": .string("\(error)")])
        await consumer.close()
        throw error
    }
    await consumer.close()
    logger.info("\(role) stopped")
}

/// Runs a consumer that records each batch in the store before committing it (the forwarding of raw
/// deliveries, the console's raw delivery index): `record` is tried until the store takes it, with the
/// jobs' backoff and one warning (a shutdown leaves the batch to be read again, and recording it twice
/// must be harmless), then the batch is committed.
func runRecordingConsumer(_ config: ConsumerConfig, topics: [String], role: String, metrics: WorkerMetrics, logger: Logger,
                          lagMetric: String = "tollgate_consumer_lag",
                          record: @escaping @Sendable ([KafkaRecord]) async throws -> Void) async throws {
    try await runConsumer(config, topics: topics, role: role, metrics: metrics, logger: logger, lagMetric: lagMetric) { consumer, lagReporter in
        var batches = consumer.batches(maxRecords: 500, idleTimeoutMs: 500).makeAsyncIterator()
        while let records = try await batches.next(), !Task.isCancelled {
            if !records.isEmpty {
                guard await untilStored("\(role) cannot record; trying again", logger: logger, { try await record(records) }) != nil else { return }
                do { try await consumer.commitAll(records) } catch {
                    logger.warning("commit failed; the batch will be read again and recorded once", metadata: ["error": .string("\(error)")])
                }
            }
            await lagReporter.tick()
        }
    }
}

/// `work`'s result once the store answers, trying again with the jobs' backoff (one warning); nil when
/// the task is cancelled first.
func untilStored<T: Sendable>(_ warning: Logger.Message, logger: Logger, _ work: () async throws -> T) async -> T? {
    var failures = 0
    while true {
        do { return try await work() } catch {
            failures += 1
            if failures == 1 { logger.warning(warning, metadata: ["error": "\(error)"]) }
            do { try await Task.sleep(for: PeriodicJob.backoff(afterFailures: failures)) } catch { return nil }
        }
    }
}

/// Publishes consumer lag per partition every few seconds, from the first assignment on.
final class LagReporter: Sendable {
    let consumer: KafkaConsumer
    let metrics: WorkerMetrics
    let metric: String
    private let last = Mutex(ContinuousClock.now - .seconds(60))

    init(consumer: KafkaConsumer, metrics: WorkerMetrics, metric: String = "tollgate_consumer_lag") {
        self.consumer = consumer
        self.metrics = metrics
        self.metric = metric
    }

    func tick() async {
        let due = last.withLock { last in
            guard ContinuousClock.now - last >= .seconds(5) else { return false }
            last = ContinuousClock.now
            return true
        }
        guard due else { return }
        let entries = await consumer.lag()
        for entry in entries {
            if let lag = entry.lag { metrics.lag(topic: entry.topic, partition: entry.partition, lag: lag, metric: metric) }
        }
        // Before the first assignment there is no partition at all: ask again at the next tick, not 5 s later.
        if entries.isEmpty { last.withLock { $0 = ContinuousClock.now - .seconds(60) } }
    }
}
