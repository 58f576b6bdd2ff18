import Entitlements
import Events
import Gateway
import Kafka
import StoreTestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Events that cannot be applied end in tollgate.events-dlt with Spring Kafka's dead-letter headers,
/// and the events consumer carries on behind them.
@Suite("End to end: dead letters")
struct DeadLetterEndToEndTests {
    static let day = ProjectionTests.day

    @Test("a value that is not JSON and a ce_specversion 2.0 go to the DLT at once with their headers; the next event is applied")
    func permanentFailures() async throws {
        try await TestDatabases.withStore(.sqlite) { store in
            try await WorkerHarness.with { harness in
                try await harness.withWorkers(store: store) { workers in
                    let now = Timestamp.now.millisecondsSince1970
                    // One subject, so one partition: the valid event is behind the two bad ones.
                    func event(_ id: String) -> NormalizedEvent {
                        ProjectionTests.event(id, .subscriptionStarted, at: now - Self.day, expiresMs: now + 29 * Self.day, subject: "otx-dlt")
                    }
                    var notJSON = DeliveryRecordBuilder.eventRecord(event("bad-json"), topic: harness.topics.events)
                    notJSON.value = Array("{not json".utf8)
                    var newVersion = DeliveryRecordBuilder.eventRecord(event("bad-version"), topic: harness.topics.events)
                    newVersion.headers = newVersion.headers.map {
                        $0.name == CloudEventHeaders.specVersion ? KafkaHeader(name: $0.name, string: "2.0") : $0
                    }
                    let badJSON = try await harness.producer.send(notJSON)
                    let badVersion = try await harness.producer.send(newVersion)
                    let valid = try await harness.publish(event("after-bad"))
                    #expect(Set([badJSON.partition, badVersion.partition, valid.partition]).count == 1)

                    try await waitUntil("the event behind the bad ones applied") { try await store.hasProcessed(eventId: "after-bad") }
                    try await waitUntil("three records handled") {
                        workers.metrics.events() + workers.metrics.total("tollgate_worker_dead_letters_total") >= 3
                    }
                    #expect(workers.metrics.events("applied") == 1)
                    #expect(workers.metrics.total("tollgate_worker_dead_letters_total") >= 2)
                    #expect(workers.metrics.total("tollgate_worker_retries_total") == 0, "permanent failures skip the retry tiers")
                    #expect(!(try await store.hasProcessed(eventId: "bad-version")))

                    // Two dead letters, or more if a commit was lost to a rebalance and the batch came again (at least once).
                    let dead = try await harness.records(harness.topics.deadLetter, atLeast: 2)
                    #expect(dead.allSatisfy { ["bad-json", "bad-version"].contains($0.headers.string(CloudEventHeaders.id)) })
                    let sent = try await harness.records(harness.topics.events)
                    for (id, delivery, message, fqcn, reason) in [
                        ("bad-json", badJSON, notJSON, "tollgate.UndecodableEvent", "the value is not a normalized event"),
                        ("bad-version", badVersion, newVersion, "tollgate.UnsupportedSchemaVersion", "ce_specversion 2.0 is not supported"),
                    ] {
                        let record = try #require(dead.first { $0.headers.string(CloudEventHeaders.id) == id }, "\(id) in the DLT")
                        let original = try #require(sent.first { $0.partition == delivery.partition && $0.offset == delivery.offset })
                        #expect(record.value == message.value)
                        #expect(record.key == message.key)
                        #expect(record.headers.string(SpringHeaders.originalTopic) == harness.topics.events)
                        #expect(record.header(SpringHeaders.originalPartition) == BigEndian.int32(delivery.partition))
                        #expect(record.header(SpringHeaders.originalOffset) == BigEndian.int64(delivery.offset))
                        #expect(record.header(SpringHeaders.originalTimestamp).map(BigEndian.integer) == original.timestampMs)
                        #expect(record.headers.string(SpringHeaders.originalConsumerGroup) == WorkerHarness.consumerGroup)
                        #expect(record.headers.string(SpringHeaders.exceptionFQCN) == fqcn)
                        #expect(record.headers.string(SpringHeaders.exceptionMessage)?.contains(reason) == true,
                                "\(record.headers.string(SpringHeaders.exceptionMessage) ?? "no message")")
                        #expect(record.header(SpringHeaders.attempts) == BigEndian.int32(1))
                        #expect(record.header(SpringHeaders.backoffTimestamp) == nil)
                    }
                }
            }
        }
    }

    @Test("a store outage that outlasts every tier: through retry-300 and retry-600 to the DLT, attempts = tiers + 1")
    func transientOutlastsTiers() async throws {
        try await TestDatabases.withURL(.sqlite) { url in
            try await withStore(url: url + "?busy_timeout_ms=200") { store in
                try await WorkerHarness.with { harness in
                    try await harness.withWorkers(store: store) { workers in
                        try await SQLiteWriteLock.holding(url) { _ in
                            let now = Timestamp.now.millisecondsSince1970
                            let event = ProjectionTests.event("outage-long", .subscriptionStarted, at: now - Self.day,
                                                              expiresMs: now + 29 * Self.day)
                            let delivery = try await harness.publish(event)
                            // One dead letter, or more if a commit was lost to a rebalance (at least once): all alike.
                            let dead = try await harness.records(harness.topics.deadLetter, atLeast: 1)
                            let record = try #require(dead.first)
                            #expect(dead.allSatisfy { $0.headers == record.headers && $0.value == record.value })
                            let original = try #require(try await harness.records(harness.topics.events).first)
                            #expect(record.headers.string(CloudEventHeaders.id) == event.id)
                            #expect(record.value == EventCoding.encode(event))
                            #expect(record.header(SpringHeaders.attempts) == BigEndian.int32(3))
                            // The position it first failed at, not the last retry tier's.
                            #expect(record.headers.string(SpringHeaders.originalTopic) == harness.topics.events)
                            #expect(record.header(SpringHeaders.originalPartition) == BigEndian.int32(delivery.partition))
                            #expect(record.header(SpringHeaders.originalOffset) == BigEndian.int64(delivery.offset))
                            #expect(record.header(SpringHeaders.originalTimestamp).map(BigEndian.integer) == original.timestampMs)
                            #expect(record.headers.string(SpringHeaders.exceptionFQCN) == "tollgate.StoreUnavailable")
                            #expect(record.header(SpringHeaders.backoffTimestamp) == nil)

                            // Each tier held it, with the attempt it was on and its first position.
                            for (delayMs, attempt) in [(300, Int32(2)), (600, 3)] {
                                let tier = try await harness.records(harness.topics.retry(delayMs: delayMs))
                                #expect(!tier.isEmpty, "retry-\(delayMs)")
                                for held in tier {
                                    #expect(held.header(SpringHeaders.attempts) == BigEndian.int32(attempt), "retry-\(delayMs)")
                                    #expect(held.headers.string(SpringHeaders.originalTopic) == harness.topics.events)
                                    #expect(held.header(SpringHeaders.originalOffset) == BigEndian.int64(delivery.offset))
                                }
                            }
                            #expect(workers.metrics.total("tollgate_worker_retries_total") >= 2)
                            #expect(workers.metrics.total("tollgate_worker_dead_letters_total") >= 1)
                            #expect(workers.metrics.events() == 0)
                            #expect(!(try await store.hasProcessed(eventId: event.id)))
                        }
                    }
                }
            }
        }
    }
}
