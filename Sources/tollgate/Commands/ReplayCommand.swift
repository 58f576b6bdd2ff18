import ArgumentParser
import Config
import Events
import Gateway
import Kafka
import Outbound
import Rejections
import Toolkit
import Verifiers
import Workers

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Verify and normalize raw deliveries again into tollgate.events (same ce_ids: the projection stays idempotent).",
        discussion: """
            Each record of raw.<source> is checked with the sender's code as `tollgate verify` does (offline; Google's \
            token is not kept in the raw topic, so a Google push is taken as authenticated when it arrived). \
            Exit 0 when every delivery verified, 1 when some were refused (they are listed), 2 on usage errors.
            """)

    @OptionGroup var cluster: OperatorOptions
    @Option(help: "The raw topic to read: raw.<source> (or just the source).") var from: String
    @Option(help: "Only deliveries received since then (RFC 3339, or an age: 30m, 24h, 7d).") var since: TimeArgument?
    @Option(help: "Only deliveries received before then.") var until: TimeArgument?
    @Flag(help: "Verify and list the events, publish nothing.") var dryRun = false

    func run() async throws {
        let name = from.hasPrefix("raw.") ? String(from.dropFirst(4)) : from
        guard let source = SenderCatalog.standard.name(name) else {
            Output.error("tollgate: --from must be raw.<source>, one of \(SenderCatalog.standard.names.map { "raw.\($0.rawValue)" }.joined(separator: ", "))")
            throw ExitCode(2)
        }
        let (config, client) = try cluster.load()
        // Offline, as `verify`: Apple's certificates valid at signedDate.
        let sender: any WebhookSource
        do {
            sender = try SenderCatalog.standard.offlineSource(named: name, settings: config.sources, fetcher: HTTPClientFetcher())
        } catch {
            Output.error("tollgate: \(error)")
            throw ExitCode(2)
        }
        let topics = config.topicNames
        let records = try await TopicScan.reported(client: client, topic: topics.raw(source), sinceMs: since?.milliseconds)
            .filter { record in until.map { (record.timestampMs ?? 0) < $0.milliseconds } ?? true }
        let producer = dryRun ? nil : try KafkaProducer(config: ProducerConfig(client: client, deliveryTimeoutMs: config.kafka.ackTimeoutMs))
        defer { producer?.close() }
        var progress = Progress("replayed deliveries", total: records.count)
        var published = 0, refused = 0, mismatched = 0
        for record in records {
            progress.advance()
            let events: [NormalizedEvent]
            do throws(Rejection) {
                events = try await sender.reverify(Self.request(from: record, source: source)).events
            } catch {
                refused += 1
                Output.error("\(record.partition):\(record.offset): refused: \(error.code): \(error.message)")
                continue
            }
            if let recorded = record.headers.string(CloudEventHeaders.id), let first = events.first, first.id != recorded {
                mismatched += 1
                Output.error("\(record.partition):\(record.offset): ce_id \(first.id) differs from the recorded \(recorded)")
            }
            for event in events {
                if let producer {
                    // A publish failure stops the replay: what was published is idempotent, run it again.
                    _ = try await producer.send(DeliveryRecordBuilder.eventRecord(event, topic: topics.events))
                } else {
                    Output.line("\(event.id)  \(event.type.rawValue)  \(event.subject)")
                }
                published += 1
            }
        }
        Output.error("\(records.count) deliveries read, \(published) events \(dryRun ? "would be published" : "published"), \(refused) refused"
                     + (mismatched > 0 ? ", \(mismatched) with a different ce_id" : ""))
        if refused > 0 { throw ExitCode(1) }
    }

    /// The delivery as it arrived (`RawDeliveryHeaders` reads back what the gateway wrote).
    static func request(from record: KafkaRecord, source: SourceName) -> WebhookRequest {
        RawDeliveryHeaders.request(body: record.value, headers: record.headers.map { ($0.name, $0.stringValue) },
                                   timestampMs: record.timestampMs, source: source)
    }
}

