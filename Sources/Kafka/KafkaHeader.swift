/// One Kafka record header. Kafka allows a null value, distinct from an empty one.
public struct KafkaHeader: Sendable, Equatable, Hashable {
    public var name: String
    public var value: [UInt8]?

    public init(name: String, value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    public init(name: String, string: String) {
        self.init(name: name, value: Array(string.utf8))
    }

    public var stringValue: String? { value.map { String(decoding: $0, as: UTF8.self) } }
}

extension Array where Element == KafkaHeader {
    /// The last value of the named header, as text (Kafka allows repeats; the last one wins, as in Spring).
    public func string(_ name: String) -> String? {
        last(where: { $0.name == name })?.stringValue
    }
}
