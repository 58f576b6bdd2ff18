import Kafka

/// Spring Kafka's retry-topic and dead-letter header names and byte encodings, so Java tooling reads
/// ours: attempts and partitions as 4-byte big-endian ints, offsets as 8-byte longs, retry timestamps as
/// Java `BigInteger.toByteArray()` (minimal two's complement, big-endian), text as UTF-8.
public enum SpringHeaders {
    public static let attempts = "retry_topic-attempts"
    public static let backoffTimestamp = "retry_topic-backoff-timestamp"
    public static let originalTimestamp = "retry_topic-original-timestamp"
    public static let originalTopic = "kafka_dlt-original-topic"
    public static let originalPartition = "kafka_dlt-original-partition"
    public static let originalOffset = "kafka_dlt-original-offset"
    public static let originalConsumerGroup = "kafka_dlt-original-consumer-group"
    public static let exceptionFQCN = "kafka_dlt-exception-fqcn"
    public static let exceptionMessage = "kafka_dlt-exception-message"
    /// Ours: how many times `tollgate dlq replay` re-published this event.
    public static let replayCount = "tollgate_replay-count"

    /// Every header this family writes: dropped before a record is re-routed, so none is doubled.
    public static let all: Set<String> = [attempts, backoffTimestamp, originalTimestamp, originalTopic, originalPartition,
                                   originalOffset, originalConsumerGroup, exceptionFQCN, exceptionMessage]

    public static func int32(_ value: Int32) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian, Array.init)
    }

    public static func int64(_ value: Int64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian, Array.init)
    }

    /// Java's `BigInteger.valueOf(v).toByteArray()`.
    public static func bigInteger(_ value: Int64) -> [UInt8] {
        var bytes = int64(value)
        // Drop leading bytes that only repeat the sign, keeping the sign bit of the next one.
        while bytes.count > 1 {
            let (first, second) = (bytes[0], bytes[1])
            guard (first == 0x00 && second & 0x80 == 0) || (first == 0xFF && second & 0x80 != 0) else { break }
            bytes.removeFirst()
        }
        return bytes
    }

    /// A big-endian two's complement integer of 1 to 8 bytes (ints, longs and BigIntegers alike).
    public static func integer(_ bytes: [UInt8]?) -> Int64? {
        guard let bytes, !bytes.isEmpty, bytes.count <= 8 else { return nil }
        var value: Int64 = bytes[0] & 0x80 != 0 ? -1 : 0
        for byte in bytes { value = (value << 8) | Int64(byte) }
        return value
    }
}

extension Array where Element == KafkaHeader {
    /// The last value of the named header as a big-endian integer (Spring's encodings).
    public func integer(_ name: String) -> Int64? {
        SpringHeaders.integer(last(where: { $0.name == name })?.value)
    }
}
