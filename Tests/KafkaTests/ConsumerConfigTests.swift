@testable import Kafka
import Testing

/// The consumers' fetch wait: what a reported purchase's answer waits on when the broker holds a fetch
/// until its wait ends (the embedded one), and what an operator may set.
@Suite("Consumer configuration")
struct ConsumerConfigTests {
    static let client = KafkaClientConfig(bootstrapServers: "127.0.0.1:9092")

    @Test("50 ms by default, 5 ms for the projection on the embedded broker, and kafka.properties win")
    func fetchWait() {
        #expect(ConsumerConfig(client: Self.client, groupId: "g").properties["fetch.wait.max.ms"] == "50")
        #expect(ConsumerConfig.answeringWaitMs(Self.client) == 50)
        var embedded = Self.client
        embedded.mockLogGuard = MockLogGuard(topics: ["tollgate.events"])
        #expect(ConsumerConfig.answeringWaitMs(embedded) == 5)
        #expect(ConsumerConfig(client: embedded, groupId: "g", fetchWaitMs: ConsumerConfig.answeringWaitMs(embedded))
            .properties["fetch.wait.max.ms"] == "5")
        var tuned = Self.client
        tuned.properties = ["fetch.wait.max.ms": "2", "enable.auto.commit": "true", "group.id": "other"]
        let properties = ConsumerConfig(client: tuned, groupId: "g", fetchWaitMs: 5).properties
        #expect(properties["fetch.wait.max.ms"] == "2")
        // What keeps offsets committed only after the work is durable stays Tollgate's.
        #expect(properties["enable.auto.commit"] == "false")
        #expect(properties["group.id"] == "g")
    }

    @Test("producers and consumers send without Nagle's algorithm unless kafka.properties say otherwise")
    func nagle() {
        #expect(ProducerConfig(client: Self.client).properties["socket.nagle.disable"] == "true")
        #expect(ConsumerConfig(client: Self.client, groupId: "g").properties["socket.nagle.disable"] == "true")
        var tuned = Self.client
        tuned.properties = ["socket.nagle.disable": "false"]
        #expect(ProducerConfig(client: tuned).properties["socket.nagle.disable"] == "false")
    }

    @Test("producers send at once, but batch for 2 ms on the embedded broker, whose core they share")
    func linger() {
        #expect(ProducerConfig(client: Self.client).properties["linger.ms"] == "0")
        var embedded = Self.client
        embedded.mockLogGuard = MockLogGuard(topics: ["tollgate.events"])
        #expect(ProducerConfig(client: embedded).properties["linger.ms"] == "2")
        #expect(ProducerConfig(client: embedded, lingerMs: 0).properties["linger.ms"] == "0")
    }
}
