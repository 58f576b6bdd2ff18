import Events
import Foundation
import Gateway
import Kafka
import Logging
import Store
import TestSupport
import Testing
import Verifiers

/// `kill -9` of `tollgate work` in the middle of projecting: after a restart the consumer group
/// redelivers what was not committed, and the store ends with every event applied exactly once.
@Suite("Crash safety: tollgate work killed with SIGKILL mid-batch")
struct WorkerCrashTests {
    static let users = 5_000
    static let day: Int64 = 86_400_000

    /// Four events per purchase, each flipping the entitlement: started, expired, resubscribed, expired.
    /// Every applied event therefore creates exactly one outbox change; one applied twice would add one.
    static func events(run: String) -> [NormalizedEvent] {
        let now = Timestamp.now.millisecondsSince1970
        let types: [EventType] = [.subscriptionStarted, .subscriptionExpired, .subscriptionResubscribed, .subscriptionExpired]
        var events: [NormalizedEvent] = []
        for user in 0..<users {
            for (step, type) in types.enumerated() {
                let at = now - 10 * day + Int64(step) * 1_000
                let expires = type == .subscriptionExpired ? nil : Timestamp(millisecondsSince1970: now + 30 * day).rfc3339
                events.append(NormalizedEvent(
                    id: "\(run)-\(user)-\(step)", type: type, source: "/apple/com.example.crash", environment: .sandbox,
                    app: "com.example.crash", subject: "otx-\(run)-\(user)",
                    occurredAt: Timestamp(millisecondsSince1970: at).rfc3339, receivedAt: Timestamp(millisecondsSince1970: at).rfc3339,
                    user: "user-\(user)", product: "pro.monthly", transaction: NormalizedEvent.Transaction(expiresAt: expires),
                    sourceType: type.rawValue))
            }
        }
        return events
    }

    @Test("20,000 events, the worker killed after a few batches and restarted: none lost, none applied twice")
    func killedMidBatch() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-work-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let topics = TopicNames(sources: SenderCatalog.standard.names)
        let cluster = try MockCluster(brokers: 1)
        for topic in topics.all { try cluster.createTopic(topic.name, partitions: 3) }
        let run = String(UUID().uuidString.prefix(8))
        let events = Self.events(run: run)
        let producer = try KafkaProducer(config: ProducerConfig(client: KafkaClientConfig(bootstrapServers: cluster.bootstrapServers), lingerMs: 5))
        for chunk in stride(from: 0, to: events.count, by: 1_000) {
            try await producer.sendAll(events[chunk..<min(chunk + 1_000, events.count)].map { DeliveryRecordBuilder.eventRecord($0, topic: topics.events) })
        }
        producer.close()

        let storePath = directory.appendingPathComponent("store.sqlite").path
        let config = """
            http: { host: 127.0.0.1 }
            api: { port: 0 }
            log: { level: info }
            kafka: { brokers: "\(cluster.bootstrapServers)", consumerGroup: crash-\(run) }
            store: { url: "sqlite:\(storePath)" }
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))

        let first = try ChildProcess(["work", "--config", configPath], directory: directory, name: "work")
        _ = try await eventually("the worker opens its store", within: .seconds(60)) { () -> Bool? in
            guard first.isRunning else { throw DevFailure("tollgate work exited:\n\(first.output.suffix(3_000))") }
            return first.output.contains("entitlement store open") ? true : nil
        }
        let database = try await SQLDatabase.open(url: "sqlite:" + storePath, logger: Logger(label: "worker-crash-test"))
        let atKill = try await eventually("the worker applied a few batches", within: .seconds(120), every: .milliseconds(20)) { () -> Int? in
            let count = try await Self.count("SELECT COUNT(*) AS n FROM processed_events", database)
            return count >= 1_000 ? count : nil
        }
        await first.crash()
        #expect(atKill < events.count, "killed mid-stream (\(atKill) of \(events.count) applied)")

        let second = try ChildProcess(["work", "--config", configPath], directory: directory, name: "work")
        _ = try await eventually("every event is applied and the outbox relayed", within: .seconds(180), every: .milliseconds(250)) { () -> Bool? in
            guard second.isRunning else { throw DevFailure("tollgate work exited:\n\(second.output.suffix(3_000))") }
            let processed = try await Self.count("SELECT COUNT(*) AS n FROM processed_events", database)
            let pending = try await Self.count("SELECT COUNT(*) AS n FROM entitlement_outbox", database)
            return processed == events.count && pending == 0 ? true : nil
        }
        // None lost: every purchase ends at its last event.
        #expect(try await Self.count("SELECT COUNT(*) AS n FROM purchases WHERE last_event_id LIKE '%-3' AND state = 'expired'", database) == Self.users)
        // None applied twice: exactly one outbox change was ever created per event (SQLite's AUTOINCREMENT
        // high-water mark counts rows since deleted by the relay).
        let changes = try await Self.count("SELECT seq AS n FROM sqlite_sequence WHERE name = 'entitlement_outbox'", database)
        #expect(changes == events.count)
        let relayed = try await TopicRecords.read(topics.entitlements, bootstrap: cluster.bootstrapServers)
        let relayedIds = Set(relayed.compactMap { $0.headerString("tollgate_event_id") })
        #expect(relayedIds.count == events.count, "every change reached tollgate.entitlements")
        print("durability: scenario=\"worker SIGKILL mid-batch\" events=\(events.count) applied_before_kill=\(atKill) applied=\(events.count) outbox_changes=\(changes) entitlement_records=\(relayed.count) duplicate_records=\(relayed.count - relayedIds.count)")
        await database.close()
        await second.kill()
    }

    static func count(_ sql: String, _ database: SQLDatabase) async throws -> Int {
        try await database.read { connection throws(StoreError) in Int(try connection.query(sql).first?.int("n") ?? 0) }
    }
}
