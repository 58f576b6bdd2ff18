/// A record to produce.
public struct KafkaMessage: Sendable {
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// nil lets the partitioner choose by key (what keeps one key's records in order); set it only
    /// to write to one exact partition.
    public var partition: Int32?

    public init(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [], partition: Int32? = nil) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    public init(topic: String, key: String?, value: [UInt8], headers: [KafkaHeader] = [], partition: Int32? = nil) {
        self.init(topic: topic, key: key.map { Array($0.utf8) }, value: value, headers: headers, partition: partition)
    }
}

/// Where a produced record landed, from its delivery report.
public struct KafkaDelivery: Sendable, Equatable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
}

/// A consumed record.
public struct KafkaRecord: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// Milliseconds since 1970 (create or log-append time), or nil when the broker gave none.
    public var timestampMs: Int64?

    public var keyString: String? { key.map { String(decoding: $0, as: UTF8.self) } }
}
