import Kafka

extension KafkaRecord {
    /// The value of the last header named `name`, as raw bytes.
    func header(_ name: String) -> [UInt8]? {
        headers.last(where: { $0.name == name })?.value
    }
}

/// Big-endian encodings written out by hand, so the tests check Spring's wire format independently
/// of the workers' own encoder.
enum BigEndian {
    static func int32(_ value: Int32) -> [UInt8] {
        (0..<4).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    static func int64(_ value: Int64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    /// A two's complement big-endian integer of any length up to 8 bytes (Java's BigInteger bytes).
    static func integer(_ bytes: [UInt8]) -> Int64 {
        bytes.reduce(bytes.first.map { $0 & 0x80 != 0 ? -1 : 0 } ?? 0) { ($0 << 8) | Int64($1) }
    }
}
