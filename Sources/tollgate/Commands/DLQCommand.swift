import ArgumentParser
import Entitlements
import Events
import Kafka
import Workers

struct DLQCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "Inspect, replay and purge the dead-letter topic (tollgate.events-dlt).",
        subcommands: [DLQList.self, DLQShow.self, DLQReplay.self, DLQPurge.self])
}

struct DLQList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "A table of dead letters, oldest first.")

    @OptionGroup var cluster: OperatorOptions
    @Option(help: "Only dead letters written since then (RFC 3339, or an age: 30m, 24h, 7d).") var since: TimeArgument?
    @Option(help: "Only this event type, e.g. subscription.renewed.") var type: String?
    @Option(help: "At most this many rows.") var limit = 100

    func run() async throws {
        let (config, client) = try cluster.load()
        let letters = try await TopicScan.reported(client: client, topic: config.topicNames.deadLetter, sinceMs: since?.milliseconds)
            .map { DeadLetter(record: $0) }
            .filter { type == nil || $0.type == type?.replacingOccurrences(of: "dev.tollgate.", with: "") }
        let shown = letters.prefix(max(0, limit))
        var rows = [["OFFSET", "TIME", "CE_ID", "TYPE", "SUBJECT", "ERROR"]]
        for letter in shown {
            rows.append([letter.position, letter.time, letter.eventId ?? "-", letter.type ?? "-", letter.subject ?? "-",
                         String(letter.error.prefix(100))])
        }
        Output.line(Table.render(rows))
        if letters.count > shown.count { Output.error("\(letters.count - shown.count) more; raise --limit to see them") }
    }
}

struct DLQShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "One dead letter: headers decoded, body pretty-printed.")

    @OptionGroup var cluster: OperatorOptions
    @Argument(help: "partition:offset, an offset, or a ce_id.") var reference: String

    func run() async throws {
        let (config, client) = try cluster.load()
        let selected = try await DeadLetter.load([reference], client: client, topic: config.topicNames.deadLetter)
        for letter in selected {
            Output.line("dead letter \(letter.position) at \(letter.time), key \(letter.record.keyString ?? "(none)")")
            Output.line("headers:")
            for (name, value) in letter.decodedHeaders { Output.line("  \(name): \(value)") }
            Output.line("body:")
            Output.line(letter.prettyBody)
        }
    }
}

struct DLQReplay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-publish dead letters to the topic they failed on; each one once unless --force.",
        discussion: """
            Exit 0 when every selected dead letter was replayed (or would be, with --dry-run), 1 when some were refused \
            as replayed before.
            """)

    @OptionGroup var cluster: OperatorOptions
    @Flag(help: "Every dead letter.") var all = false
    @Argument(help: "partition:offset, offsets or ce_ids to replay.") var references: [String] = []
    @Flag(help: "Show what would be replayed, publish nothing.") var dryRun = false
    @Option(help: "At most this many re-publications per second.") var rate: Double?
    @Flag(help: "Replay dead letters that were replayed before.") var force = false

    func validate() throws {
        guard all != !references.isEmpty else { throw ValidationError("name dead letters to replay, or pass --all (not both)") }
        if let rate, rate <= 0 { throw ValidationError("--rate must be positive") }
    }

    func run() async throws {
        let (config, client) = try cluster.load()
        let selected = try await DeadLetter.load(all ? nil : references, client: client, topic: config.topicNames.deadLetter)
        let logger = LoggingSetup.quiet()
        let store = try await EntitlementStore.open(url: config.store.url, logger: logger)
        let producer = dryRun ? nil : try KafkaProducer(config: ProducerConfig(client: client, deliveryTimeoutMs: config.kafka.ackTimeoutMs))
        defer { producer?.close() }
        var progress = Progress("replayed", total: selected.count)
        var replayed = 0, skipped = 0
        let replay = DeadLetterReplay(store: store, producer: producer, eventsTopic: config.topicNames.events)
        for letter in selected {
            switch try await replay.replay(letter, force: force, nowMs: Timestamp.now.millisecondsSince1970) {
            case .replayedBefore(let count):
                skipped += 1
                Output.error("skipped \(letter.position) (\(letter.eventId ?? "-")): replayed \(count) time(s) already; --force replays it again")
                continue
            case .wouldReplay(let target):
                Output.line("would replay \(letter.position) (\(letter.eventId ?? "-")) to \(target)")
                continue
            case .replayed:
                replayed += 1
                progress.advance()
            }
            if let rate { try await Task.sleep(for: .seconds(1 / rate)) }
        }
        await store.close()
        Output.error(dryRun ? "dry run: \(selected.count - skipped) would be replayed, \(skipped) skipped"
                            : "replayed \(replayed), skipped \(skipped)")
        // A refusal is a failure to do what was asked: scripts must see it, not only a line on stderr.
        if skipped > 0 { throw ExitCode(1) }
    }
}

struct DLQPurge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "purge", abstract: "Delete the dead letters written before a time.")

    @OptionGroup var cluster: OperatorOptions
    @Option(help: "Delete what was written before then (RFC 3339, or an age: 30d).") var before: TimeArgument

    func run() async throws {
        let (config, client) = try cluster.load()
        let topic = config.topicNames.deadLetter
        let reader = try TopicReader(client: client, topic: topic)
        var cut: [Int32: Int64] = [:]
        for partition in try await reader.partitions() {
            cut[partition] = try await reader.offset(forTimestampMs: before.milliseconds, partition: partition)
        }
        do {
            try await KafkaAdmin(client: client).deleteRecords(topic: topic, beforeOffsets: cut)
        } catch where error.isUnsupported {
            // Said plainly: librdkafka's own text ("Required feature not supported by broker") names no operation.
            Output.error("tollgate: purge failed: this cluster does not support deleting records (Kafka's DeleteRecords; "
                         + "the embedded broker of `tollgate dev` never does); nothing was deleted (\(error))")
            throw ExitCode(1)
        } catch {
            Output.error("tollgate: purge failed: \(error)")
            throw ExitCode(1)
        }
        for (partition, offset) in cut.sorted(by: { $0.key < $1.key }) {
            Output.line("partition \(partition): deleted below offset \(offset)")
        }
    }
}

/// Left-aligned columns, two spaces apart.
enum Table {
    static func render(_ rows: [[String]]) -> String {
        guard let columns = rows.map(\.count).max() else { return "" }
        let widths = (0..<columns).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
