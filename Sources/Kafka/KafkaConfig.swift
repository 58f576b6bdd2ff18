/// Typed client configuration. Every librdkafka property name Tollgate sets lives in this file.
public struct KafkaClientConfig: Sendable {
    /// `host:port,host:port`.
    public var bootstrapServers: String
    public var clientId: String
    /// Passed through to librdkafka unchanged (TLS, SASL, ...); they win over Tollgate's defaults.
    public var properties: [String: String]
    /// Set where the cluster is the mock this process runs (`tollgate dev`): its producers refuse what
    /// the mock would drop before this process's consumers committed it, and its consumers report commits.
    public var mockLogGuard: MockLogGuard?

    public init(bootstrapServers: String, clientId: String = "tollgate", properties: [String: String] = [:],
                mockLogGuard: MockLogGuard? = nil) {
        self.bootstrapServers = bootstrapServers
        self.clientId = clientId
        self.properties = properties
        self.mockLogGuard = mockLogGuard
    }

    /// `socket.nagle.disable`: a request written while the previous one is not yet acknowledged is sent at
    /// once, not after the broker's delayed ACK (up to 40 ms); Kafka's Java clients do the same.
    var baseProperties: [String: String] {
        ["bootstrap.servers": bootstrapServers, "client.id": clientId, "socket.nagle.disable": "true"]
    }
}

public struct ProducerConfig: Sendable {
    public var client: KafkaClientConfig
    /// `message.timeout.ms`: a record not acknowledged by then gets a failed delivery report,
    /// so a caller is never left waiting for librdkafka's five-minute default.
    public var deliveryTimeoutMs: Int
    /// `linger.ms`: 0 keeps single-request latency low (measured ~0.5 ms against ~8 ms at 5); 2 on
    /// `tollgate dev`'s embedded broker (`defaultLingerMs`).
    public var lingerMs: Int
    /// How long the producer, run as a service, flushes in-flight records on graceful shutdown.
    public var shutdownFlushTimeoutMs: Int32

    public init(client: KafkaClientConfig, deliveryTimeoutMs: Int = 5_000, lingerMs: Int? = nil, shutdownFlushTimeoutMs: Int32 = 10_000) {
        self.client = client
        self.deliveryTimeoutMs = deliveryTimeoutMs
        self.lingerMs = lingerMs ?? Self.defaultLingerMs(client)
        self.shutdownFlushTimeoutMs = shutdownFlushTimeoutMs
    }

    /// 0, or 2 ms on `tollgate dev`'s embedded broker: there the broker shares the process's core, and a
    /// record sent alone in its request costs both sides a request; at 2 ms the workers' batches and the
    /// gateway's concurrent deliveries share requests, which kept `make bench`'s webhook latency run (an
    /// Iaptic callback to its outbound delivery, through `tollgate dev`) from falling behind its rate
    /// once the broker answered without Nagle's delay (docs/performance.md).
    public static func defaultLingerMs(_ client: KafkaClientConfig) -> Int { client.mockLogGuard == nil ? 0 : 2 }

    /// The durability settings are applied last, so pass-through properties cannot weaken them
    /// (configuration also refuses such keys with a clear message).
    var properties: [String: String] {
        client.baseProperties
            .merging(["linger.ms": String(lingerMs)]) { $1 }
            .merging(client.properties) { $1 }
            .merging([
                "enable.idempotence": "true",
                "acks": "all",
                "message.timeout.ms": String(deliveryTimeoutMs),
                "bootstrap.servers": client.bootstrapServers,
            ]) { $1 }
    }
}

public struct ConsumerConfig: Sendable {
    public enum OffsetReset: String, Sendable { case earliest, latest }

    public var client: KafkaClientConfig
    public var groupId: String
    public var offsetReset: OffsetReset
    public var sessionTimeoutMs: Int
    /// `fetch.wait.max.ms` unless `kafka.properties` sets it (see `properties`).
    public var fetchWaitMs: Int

    public init(client: KafkaClientConfig, groupId: String, offsetReset: OffsetReset = .earliest, sessionTimeoutMs: Int = 10_000,
                fetchWaitMs: Int = 50) {
        self.client = client
        self.groupId = groupId
        self.offsetReset = offsetReset
        self.sessionTimeoutMs = sessionTimeoutMs
        self.fetchWaitMs = fetchWaitMs
    }

    /// The wait of a consumer whose records a request waits for (the projection): a few milliseconds on
    /// the embedded broker, which answers a fetch only when its wait ends; the default elsewhere.
    public static func answeringWaitMs(_ client: KafkaClientConfig) -> Int { client.mockLogGuard == nil ? 50 : 5 }

    var properties: [String: String] {
        // A purchase an app reports is answered once the projection applied it, so a record must not
        // wait out a fetch that began before it arrived (librdkafka's default is 500 ms). A real broker
        // answers a fetch as records arrive, so this only spaces an idle consumer's fetches; the embedded
        // broker (librdkafka's mock) answers one only when the wait ends, so `tollgate dev`'s projection
        // waits 5 ms (`answeringWaitMs`), and `make bench`, whose `tollgate work` drives a separate mock,
        // sets 5 in `kafka.properties`, which win over this.
        client.baseProperties.merging(["fetch.wait.max.ms": String(fetchWaitMs)]) { $1 }.merging(client.properties) { $1 }.merging([
            "group.id": groupId,
            // Offsets are committed by the caller after its work is durable, never in the background.
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "auto.offset.reset": offsetReset.rawValue,
            "session.timeout.ms": String(sessionTimeoutMs),
            "enable.partition.eof": "false",
        ]) { $1 }
    }
}

extension KafkaClientConfig {
    /// A group-less reader (`TopicReader`). librdkafka's consumer needs a group.id even for
    /// `rd_kafka_assign`: a random one is never joined and never gets offsets, as nothing commits.
    var readerProperties: [String: String] {
        baseProperties.merging(properties) { $1 }.merging([
            "group.id": "tollgate-reader-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))",
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            // A start offset whose records were deleted meanwhile restarts at the oldest record
            // left, never at the end.
            "auto.offset.reset": "earliest",
            // Reaching a partition's end is reported, so a read stops even when the last offsets
            // before the end hold no record (deleted, or transaction markers).
            "enable.partition.eof": "true",
            "allow.auto.create.topics": "false",
        ]) { $1 }
    }
}
