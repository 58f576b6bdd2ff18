import Kafka
import Logging
import ServiceLifecycle
import Spool

/// Publishes spooled deliveries to Kafka in the order they were spooled, and forgets each once
/// every one of its records is acknowledged. After a failure it probes with one delivery at a time,
/// backing off, until Kafka acknowledges again.
public struct SpoolRelay: Service {
    let spool: DeliverySpool
    let producer: KafkaProducer
    let metrics: GatewayMetrics
    let logger: Logger
    let batchSize: Int

    public init(spool: DeliverySpool, producer: KafkaProducer, metrics: GatewayMetrics, logger: Logger, batchSize: Int = 256) {
        self.spool = spool
        self.producer = producer
        self.metrics = metrics
        self.logger = logger
        self.batchSize = batchSize
    }

    public func run() async throws {
        var backoff = Self.firstBackoff
        var healthy = true
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            if spool.isEmpty {
                try? await Task.sleep(for: .milliseconds(20))
                continue
            }
            do {
                try await relayOnce(limit: healthy ? batchSize : 1)
                if !healthy { logger.notice("kafka acknowledges again; draining the spool", metadata: ["records": "\(spool.stats.records)"]) }
                healthy = true
                backoff = Self.firstBackoff
            } catch {
                if healthy { logger.warning("spool relay waiting for kafka", metadata: ["error": "\(error)"]) }
                healthy = false
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
        await drainOnShutdown()
    }

    private static let firstBackoff = Duration.milliseconds(200)

    /// Listed before the HTTP server, the relay stops after it: one last pass publishes what the
    /// final requests spooled, so a gateway whose disk does not outlive it leaves nothing behind
    /// when Kafka is up. It stops at the first failure; the spool keeps the rest.
    private func drainOnShutdown() async {
        guard !spool.isEmpty, !Task.isCancelled else { return }
        logger.info("publishing the spool before shutdown", metadata: ["records": "\(spool.stats.records)"])
        while !spool.isEmpty, !Task.isCancelled {
            do { try await relayOnce(limit: batchSize) } catch {
                logger.notice("spool kept for the next start", metadata: ["records": "\(spool.stats.records)", "error": "\(error)"])
                return
            }
        }
    }

    /// Sends the oldest deliveries; throws when some record was not acknowledged.
    func relayOnce(limit: Int) async throws {
        let batch = try await spool.oldest(limit: limit)
        guard !batch.isEmpty else {
            // Rows counted but not yet committed by a concurrent append: look again shortly.
            try await Task.sleep(for: .milliseconds(5))
            return
        }
        let results = await producer.sendEach(batch.flatMap(\.messages))
        var published: [Int64] = []
        var remaining: [Int64: [KafkaMessage]] = [:]
        var firstError: KafkaError?
        var index = 0
        for delivery in batch {
            var failed: [KafkaMessage] = []
            for message in delivery.messages {
                if case .failure(let error) = results[index] {
                    failed.append(message)
                    firstError = firstError ?? error
                }
                index += 1
            }
            if failed.isEmpty { published.append(delivery.id) }
            else if failed.count < delivery.messages.count { remaining[delivery.id] = failed }
        }
        try await spool.settle(published: published, remaining: remaining)
        metrics.spoolRelayed(published.count)
        if let firstError { throw firstError }
    }
}
