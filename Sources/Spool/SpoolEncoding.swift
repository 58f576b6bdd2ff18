import Kafka

/// The spool's on-disk form of one delivery's records: a length-prefixed binary layout, so bodies,
/// keys and header values keep their exact bytes (the signature was checked over them).
enum SpoolEncoding {
    static func encode(_ messages: [KafkaMessage]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(messages.reduce(64) { $0 + $1.value.count + ($1.key?.count ?? 0) + 256 })
        append(UInt32(messages.count), to: &out)
        for message in messages {
            appendBytes(Array(message.topic.utf8), to: &out)
            appendOptional(message.key, to: &out)
            appendBytes(message.value, to: &out)
            append(UInt32(bitPattern: message.partition ?? -1), to: &out)
            append(UInt32(message.headers.count), to: &out)
            for header in message.headers {
                appendBytes(Array(header.name.utf8), to: &out)
                appendOptional(header.value, to: &out)
            }
        }
        return out
    }

    /// Nil when the bytes are not a complete encoding (a damaged row).
    static func decode(_ bytes: [UInt8]) -> [KafkaMessage]? {
        var reader = Reader(input: bytes)
        guard let count = reader.uint32(), count <= bytes.count else { return nil }
        var messages: [KafkaMessage] = []
        for _ in 0..<count {
            guard let topic = reader.bytes(), let key = reader.optionalBytes(), let value = reader.bytes(),
                  let partition = reader.uint32(), let headerCount = reader.uint32(), headerCount <= bytes.count else { return nil }
            var headers: [KafkaHeader] = []
            for _ in 0..<headerCount {
                guard let name = reader.bytes(), let value = reader.optionalBytes() else { return nil }
                headers.append(KafkaHeader(name: String(decoding: name, as: UTF8.self), value: value))
            }
            let signed = Int32(bitPattern: partition)
            messages.append(KafkaMessage(topic: String(decoding: topic, as: UTF8.self), key: key, value: value,
                                         headers: headers, partition: signed < 0 ? nil : signed))
        }
        return reader.atEnd ? messages : nil
    }

    private static func append(_ value: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
    }

    private static func appendBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
        append(UInt32(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    /// A null (absent) value is distinct from an empty one: a marker byte says which.
    private static func appendOptional(_ bytes: [UInt8]?, to out: inout [UInt8]) {
        guard let bytes else { return out.append(0) }
        out.append(1)
        appendBytes(bytes, to: &out)
    }

    private struct Reader {
        let input: [UInt8]
        var index = 0

        var atEnd: Bool { index == input.count }

        mutating func uint32() -> UInt32? {
            guard input.count - index >= 4 else { return nil }
            var value: UInt32 = 0
            for offset in 0..<4 { value = value << 8 | UInt32(input[index + offset]) }
            index += 4
            return value
        }

        mutating func bytes() -> [UInt8]? {
            guard let count = uint32().map(Int.init), input.count - index >= count else { return nil }
            defer { index += count }
            return Array(input[index..<index + count])
        }

        mutating func optionalBytes() -> [UInt8]?? {
            guard index < input.count else { return nil }
            let marker = input[index]
            index += 1
            switch marker {
            case 0: return .some(nil)
            case 1: return bytes().map { .some($0) }
            default: return nil
            }
        }
    }
}
