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

    /// What became of a batch: each record applied or re-routed (its offset may be committed), shutdown
    /// interrupted the re-routing, or (only when the caller would rather not wait) the embedded broker
    /// refused a re-routed record (`tollgate dev`: the tier holds all it may until its consumer catches up).
    enum Handled: Equatable {
        case done, stopped, brokerFull
    }

    /// `waitWhenFull`: keep re-routing while the embedded broker refuses (the projection: it then stops
    /// committing, and the events topic fills behind it); false returns `.brokerFull` at once (the retry
    /// consumer, which must go on draining the other tiers, the ones that would make room).
    func handle(_ records: [KafkaRecord], waitWhenFull: Bool = true) async -> Handled {
        await handle(await processor.prepare(records), waitWhenFull: waitWhenFull)
    }

    /// The same for a batch already decoded and enriched.
    func handle(_ prepared: EventProcessor.Prepared, waitWhenFull: Bool = true) async -> Handled {
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
        var delay = Duration.milliseconds(200)
        // Only what was not acknowledged is sent again: a tier gets each record once.
        while !messages.isEmpty {
            let failures = zip(messages, await producer.sendEach(messages)).compactMap { message, result -> (KafkaMessage, KafkaError)? in
                if case .failure(let error) = result { return (message, error) }
                return nil
            }
            messages = failures.map(\.0)
            guard let error = failures.first?.1 else { break }
            if error.kind == .embeddedBrokerFull, !waitWhenFull { return .brokerFull }
            logger.log(level: error.kind == .embeddedBrokerFull ? .warning : .error, "could not re-route failed events; trying again",
                       metadata: ["error": .string("\(error)"), "records": .stringConvertible(messages.count)])
            do { try await Task.sleep(for: delay) } catch { return .stopped }
            delay = min(delay * 2, .seconds(10))
        }
        return .done
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
