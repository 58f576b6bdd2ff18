import Events
import Kafka
import Logging
import Rejections
import Spool
import Verifiers

/// Makes an accepted delivery durable before its sender hears 2xx: Kafka with `acks=all` within
/// `kafka.ackTimeoutMs`, else the spool (fsynced), else a 503 so the sender retries. A redelivery
/// of events accepted within the deduplication window is answered without publishing again.
public final class DeliveryWriter: Sendable {
    public enum Outcome: String, Sendable {
        case published, spooled, duplicate
    }

    public let producer: KafkaProducer
    public let records: DeliveryRecordBuilder
    public let spool: DeliverySpool?
    public let recent: RecentDeliveries
    private let logger: Logger
    /// The embedded broker refuses at once, request after request: one line in ten seconds says so.
    private let fullNotices = LogThrottle(interval: .seconds(10))

    public init(producer: KafkaProducer, records: DeliveryRecordBuilder, spool: DeliverySpool?, recent: RecentDeliveries, logger: Logger) {
        self.producer = producer
        self.records = records
        self.spool = spool
        self.recent = recent
        self.logger = logger
    }

    public func write(_ delivery: AcceptedDelivery, source: SourceName, request: WebhookRequest) async throws(Rejection) -> Outcome {
        // Quarantined deliveries have no ce_id; they are rare enough to publish every time.
        let ids = delivery.quarantine == nil ? delivery.events.map(\.id) : []
        if recent.containsAll(ids) { return .duplicate }

        var pending = records.records(for: delivery, source: source, request: request)
        var cause = "kafka did not acknowledge the event"
        // While the spool holds deliveries, new ones queue behind them: the relay publishes in
        // order, so a later event of a purchase never overtakes an earlier one.
        if spool?.isEmpty ?? true {
            let results = await producer.sendEach(pending)
            var failed: [KafkaMessage] = []
            var firstError: KafkaError?
            for (message, result) in zip(pending, results) {
                if case .failure(let error) = result {
                    failed.append(message)
                    firstError = firstError ?? error
                }
            }
            if failed.isEmpty {
                recent.insert(ids)
                return .published
            }
            let full = firstError?.kind == .embeddedBrokerFull
            if full { cause = "the embedded broker holds all it keeps until the workers catch up" }
            var metadata: Logger.Metadata = ["source": .string(source.rawValue), "error": .string(firstError?.message ?? ""),
                                             "records": .stringConvertible(failed.count), "spool": .string(spool == nil ? "disabled" : "enabled")]
            if !full {
                logger.warning("kafka did not acknowledge in time", metadata: metadata)
            } else if let refusals = fullNotices.take() {
                metadata["refusals"] = .stringConvertible(refusals)
                logger.warning("the embedded broker refused the records: the workers are behind", metadata: metadata)
            }
            // Records Kafka did acknowledge are not spooled again.
            pending = failed
        }
        guard let spool else {
            throw Rejection(.notDurable, "\(cause) and the spool is disabled; retry later")
        }
        do {
            try await spool.append(pending)
        } catch {
            logger.warning("delivery not durable", metadata: ["source": .string(source.rawValue), "error": .string(error.message)])
            throw Rejection(.notDurable, "\(cause) and \(error.kind == .full ? "the spool is full" : "the spool is unavailable"); retry later")
        }
        recent.insert(ids)
        return .spooled
    }
}
