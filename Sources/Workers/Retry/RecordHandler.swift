import Events
import Kafka
import Logging

/// Processes records and sends every failure on to its retry tier or the DLT, so that afterwards each
/// record is either applied or durably elsewhere and its offset may be committed.
struct RecordHandler: Sendable {
    let processor: EventProcessor
    let router: FailureRouter
    let producer: KafkaProducer
    let metrics: WorkerMetrics
    let logger: Logger

    /// True when every record is done or re-routed (acknowledged by Kafka); false only when shutdown
    /// interrupted re-routing, and then nothing may be committed.
    func handle(_ records: [KafkaRecord]) async -> Bool {
        await handle(await processor.prepare(records))
    }

    /// The same for a batch already decoded and enriched.
    func handle(_ prepared: EventProcessor.Prepared) async -> Bool {
        let records = prepared.records
        let dispositions = await processor.apply(prepared)
        var messages: [KafkaMessage] = []
        for (record, disposition) in zip(records, dispositions) {
            let type = record.headers.string(CloudEventHeaders.type) ?? "unknown"
            switch disposition {
            case .done(let outcome):
                metrics.processed(type: type, outcome: "\(outcome)")
            case .failed(let failure):
                let (message, deadLetter) = router.route(record, failure: failure, nowMs: processor.now())
                messages.append(message)
                metrics.failed(type: type, route: deadLetter ? "dead_letter" : "retry", failure: failure.type)
                if deadLetter { metrics.deadLettered() } else { metrics.retried(topic: message.topic) }
                logger.log(level: deadLetter ? .error : .warning, deadLetter ? "event sent to the dead-letter topic" : "event sent to a retry tier",
                           metadata: ["ce_id": .string(record.headers.string(CloudEventHeaders.id) ?? "?"), "topic": .string(message.topic),
                                      "attempt": .stringConvertible(FailureRouter.attempt(of: record)), "error": .string(failure.description),
                                      "from": .string("\(record.topic)/\(record.partition)@\(record.offset)")])
            }
        }
        guard !messages.isEmpty else { return true }
        var delay = Duration.milliseconds(200)
        while true {
            do {
                _ = try await producer.sendAll(messages)
                return true
            } catch {
                logger.error("could not re-route failed events; trying again", metadata: ["error": .string("\(error)")])
                do { try await Task.sleep(for: delay) } catch { return false }
                delay = min(delay * 2, .seconds(10))
            }
        }
    }
}

extension KafkaConsumer {
    /// Commits the next offset of every partition in `records`.
    func commitAll(_ records: [KafkaRecord]) async throws(KafkaError) {
        var next: [TopicPartition: Int64] = [:]
        for record in records {
            let id = TopicPartition(topic: record.topic, partition: record.partition)
            next[id] = Swift.max(next[id] ?? -1, record.offset + 1)
        }
        try await commit(next)
    }
}
