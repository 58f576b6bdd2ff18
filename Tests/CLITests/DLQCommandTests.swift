import Events
import Foundation
import Kafka
import Merchant
import ProviderAPIs
import Testing
import Workers

extension DevEndToEndTests {
    /// `tollgate dlq` against the running dev broker and store, run in the dev process's directory as an
    /// operator would. Each test writes its own dead letters and looks only at those.
    @Suite("tollgate dlq")
    struct DeadLetters {
        @Test("list shows a dead letter of the workers and a valid event's with ce_id, type and error; show decodes them")
        func listAndShow() async throws {
            let dev = try DevEndToEndTests.dev()
            let producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: dev.bootstrap)))
            defer { producer.close() }

            // Not an event: the real workers dead-letter it at once (no retry can fix it).
            let junkId = "junk-\(UUID().uuidString.lowercased())"
            try await producer.send(KafkaMessage(topic: "tollgate.events", key: junkId, value: Array("this is not an event".utf8), headers: [
                KafkaHeader(name: "ce_specversion", string: "1.0"), KafkaHeader(name: "ce_id", string: junkId),
                KafkaHeader(name: "ce_type", string: "dev.tollgate.purchase.completed"),
            ]))
            let junk = try await dev.eventually("the workers dead-letter the undecodable record") { () -> KafkaRecord? in
                try await dev.records("tollgate.events-dlt").first { $0.headerString("ce_id") == junkId }
            }
            let letter = DeadLetterFixture()
            try await producer.send(letter.message())
            let valid = try #require(try await dev.records("tollgate.events-dlt").first { $0.headerString("ce_id") == letter.event.id })
            // The fixture carries the same dead-letter headers as the workers' own dead letter.
            let deadLetterHeaders = { (record: KafkaRecord) in Set(record.headers.map(\.name).filter { !$0.hasPrefix("ce_") && $0 != "content-type" }) }
            #expect(deadLetterHeaders(valid) == deadLetterHeaders(junk))

            let list = try await dev.cli(["dlq", "list"])
            #expect(list.status == 0, "\(list.stderr)")
            let lines = list.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first.map(Self.columns) == ["OFFSET", "TIME", "CE_ID", "TYPE", "SUBJECT", "ERROR"])
            let junkRow = try #require(lines.first { $0.contains(junkId) }.map(Self.columns))
            #expect(Array(junkRow.prefix(5)) == ["\(junk.partition):\(junk.offset)", Timestamp(millisecondsSince1970: junk.timestampMs ?? 0).rfc3339,
                                                junkId, "purchase.completed", junkId])
            #expect(junkRow.last?.hasPrefix("tollgate.UndecodableEvent: the value is not a normalized event") == true)
            let validRow = try #require(lines.first { $0.contains(letter.event.id) }.map(Self.columns))
            #expect(validRow == ["\(valid.partition):\(valid.offset)", Timestamp(millisecondsSince1970: valid.timestampMs ?? 0).rfc3339,
                                 letter.event.id, "subscription.renewed", letter.event.subject,
                                 "\(DeadLetterFixture.failureType): \(DeadLetterFixture.failureMessage)"])

            let renewals = try await dev.cli(["dlq", "list", "--type", "subscription.renewed"])
            #expect(renewals.status == 0)
            #expect(renewals.stdout.contains(letter.event.id))
            #expect(!renewals.stdout.contains(junkId))
            // By the time the dead letters were written: the valid one came after the workers' one.
            let recent = try await dev.cli(["dlq", "list", "--since", Timestamp(millisecondsSince1970: valid.timestampMs ?? 0).rfc3339])
            #expect(recent.stdout.contains(letter.event.id))
            #expect(!recent.stdout.contains(junkId))
            let limited = try await dev.cli(["dlq", "list", "--limit", "1"])
            #expect(limited.stdout.split(separator: "\n").count == 2)
            #expect(limited.stderr.contains("\(lines.count - 2) more; raise --limit to see them"))

            let show = try await dev.cli(["dlq", "show", letter.event.id])
            #expect(show.status == 0, "\(show.stderr)")
            let shown = show.stdout.components(separatedBy: "\nbody:\n")
            #expect(shown.count == 2)
            let headers = shown[0].split(separator: "\n").map(String.init)
            #expect(headers.first == "dead letter \(valid.partition):\(valid.offset) at \(Timestamp(millisecondsSince1970: valid.timestampMs ?? 0).rfc3339), key \(letter.event.subject)")
            // Spring's binary ints and timestamps as numbers, text as text.
            for expected in [
                "  ce_id: \(letter.event.id)",
                "  ce_type: dev.tollgate.subscription.renewed",
                "  kafka_dlt-original-topic: tollgate.events",
                "  kafka_dlt-original-partition: \(DeadLetterFixture.originalPartition)",
                "  kafka_dlt-original-offset: \(DeadLetterFixture.originalOffset)",
                "  retry_topic-original-timestamp: \(letter.failedAtMs) (\(Timestamp(millisecondsSince1970: letter.failedAtMs).rfc3339))",
                "  kafka_dlt-exception-fqcn: \(DeadLetterFixture.failureType)",
                "  kafka_dlt-exception-message: \(DeadLetterFixture.failureMessage)",
                "  retry_topic-attempts: \(DeadLetterFixture.attempts)",
            ] {
                #expect(headers.contains(expected), "\(expected)")
            }
            // The body pretty-printed: indented over several lines, the same event.
            let body = shown.count == 2 ? shown[1] : ""
            #expect(body.split(separator: "\n").count > 10)
            #expect(body.contains("\n  \"app\""))
            #expect(try EventCoding.decode(Array(body.utf8)) == letter.event)

            // By position; a body that is not JSON is shown as it is.
            let junkShown = try await dev.cli(["dlq", "show", "\(junk.partition):\(junk.offset)"])
            #expect(junkShown.status == 0)
            #expect(junkShown.stdout.contains("  retry_topic-attempts: 1\n"))
            #expect(junkShown.stdout.contains("  kafka_dlt-original-topic: tollgate.events\n"))
            #expect(junkShown.stdout.hasSuffix("body:\nthis is not an event\n"))

            let missing = try await dev.cli(["dlq", "show", "no-such-letter"])
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("no dead letter with offset or ce_id no-such-letter"))
        }

        @Test("replay re-publishes a dead letter once; again only with --force, which the projection takes as a duplicate")
        func replay() async throws {
            let dev = try DevEndToEndTests.dev()
            let producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: dev.bootstrap)))
            defer { producer.close() }
            let letter = DeadLetterFixture()
            let id = letter.event.id
            let user = try #require(letter.event.user)
            try await producer.send(letter.message())
            let dead = try #require(try await dev.records("tollgate.events-dlt").first { $0.headerString("ce_id") == id })
            let position = "\(dead.partition):\(dead.offset)"
            let replayed = { () async throws -> [KafkaRecord] in try await dev.records("tollgate.events").filter { $0.headerString("ce_id") == id } }

            // A dry run says what it would do, and publishes and records nothing.
            let dryRun = try await dev.cli(["dlq", "replay", id, "--dry-run"])
            #expect(dryRun.status == 0, "\(dryRun.stderr)")
            #expect(dryRun.stdout == "would replay \(position) (\(id)) to tollgate.events\n")
            #expect(dryRun.stderr.contains("dry run: 1 would be replayed, 0 skipped"))
            #expect(try await replayed().isEmpty)
            #expect(try await dev.withStore { try await $0.replayCount(partition: dead.partition, offset: dead.offset) } == 0)

            // Named twice, by ce_id and by position: one replay.
            let first = try await dev.cli(["dlq", "replay", id, position])
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stderr.contains("replayed 1, skipped 0"))
            let once = try await replayed()
            #expect(once.count == 1)
            #expect(once.first?.keyString == letter.event.subject)
            #expect(once.first?.value == EventCoding.encode(letter.event))
            #expect(once.first?.headerString(SpringHeaders.replayCount) == "1")
            #expect(once.first?.headers.contains { SpringHeaders.all.contains($0.name) } == false, "no dead-letter headers go back")
            let granted = try await dev.entitlements(user: user, app: DeadLetterFixture.app, environment: "production", until: "the projection applies the replayed event") {
                !$0.entitlements.isEmpty
            }
            let purchaseId = try await dev.purchaseId(source: "iaptic", app: DeadLetterFixture.app, environment: "production",
                                                      subject: letter.event.subject)
            #expect(granted.entitlements == [EntitlementsBody.Item(product: DeadLetterFixture.product, source: "iaptic", purchaseId: purchaseId,
                                                                  state: "active", expiresAt: letter.expiresAt, gracePeriodExpiresAt: nil)])
            _ = try await dev.eventually("the entitlement change is published and leaves the outbox") { () -> Bool? in
                guard try await dev.records("tollgate.entitlements").contains(where: { $0.keyString == letter.topicKey }) else { return nil }
                return try await dev.withStore { try await $0.pendingChanges(limit: 100) }.isEmpty ? true : nil
            }

            // Replayed already: refused, nothing published.
            let again = try await dev.cli(["dlq", "replay", id])
            #expect(again.status == 1)
            #expect(again.stderr.contains("skipped \(position) (\(id)): replayed 1 time(s) already; --force replays it again"))
            #expect(again.stderr.contains("replayed 0, skipped 1"))
            #expect(try await replayed().count == 1)

            let duplicates = [#"outcome="duplicate""#, #"type="dev.tollgate.subscription.renewed""#]
            let duplicatesBefore = try await dev.metric("tollgate_worker_events_total", duplicates)
            let forced = try await dev.cli(["dlq", "replay", id, "--force"])
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(forced.stderr.contains("replayed 1, skipped 0"))
            #expect(try await replayed().map { $0.headerString(SpringHeaders.replayCount) } == ["1", "2"])
            _ = try await dev.eventually("the projection sees the forced replay") { () -> Bool? in
                try await dev.metric("tollgate_worker_events_total", duplicates) > duplicatesBefore ? true : nil
            }
            // A duplicate of its ce_id: the entitlement, the outbox and tollgate.entitlements stay as they were.
            #expect(try await dev.metric("tollgate_worker_events_total", duplicates) == duplicatesBefore + 1)
            let after = try await dev.entitlements(user: user, app: DeadLetterFixture.app, environment: "production")
            #expect(try JSONDecoder().decode(EntitlementsBody.self, from: after.data) == granted)
            #expect(try await dev.withStore { try await $0.pendingChanges(limit: 100) }.isEmpty)
            #expect(try await dev.records("tollgate.entitlements").filter { $0.keyString == letter.topicKey }.count == 1)
            #expect(try await dev.withStore { try await $0.replayCount(partition: dead.partition, offset: dead.offset) } == 2)
        }

        @Test("purge needs DeleteRecords, which the embedded broker lacks: exit 1, saying so, and every dead letter stays")
        func purgeOnEmbeddedBroker() async throws {
            let dev = try DevEndToEndTests.dev()
            let producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: dev.bootstrap)))
            defer { producer.close() }
            let letter = DeadLetterFixture()
            try await producer.send(letter.message())
            let before = try await dev.records("tollgate.events-dlt").count

            let purge = try await dev.cli(["dlq", "purge", "--before", "1m"])
            #expect(purge.status == 1)
            #expect(purge.stderr.contains("tollgate: purge failed: this cluster does not support deleting records"), "\(purge.stderr)")
            #expect(purge.stderr.contains("nothing was deleted"))
            #expect(purge.stdout.isEmpty)
            #expect(try await dev.records("tollgate.events-dlt").count == before)
        }

        /// A `dlq list` row's six columns: the first five are single words, the error is the rest.
        static func columns(_ row: String) -> [String] {
            var rest = Substring(row)
            var columns: [String] = []
            while columns.count < 5 {
                rest = rest.drop { $0 == " " }
                let word = rest.prefix { $0 != " " }
                guard !word.isEmpty else { break }
                columns.append(String(word))
                rest = rest.dropFirst(word.count)
            }
            let error = rest.drop { $0 == " " }
            return error.isEmpty ? columns : columns + [String(error)]
        }
    }
}
