/// JSON written by hand as the same bytes `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes`
/// produces for the same Codable value, without Codable's dynamic containers: the event, a purchase's
/// answer, an entitlement change (docs/performance.md says what each cost through `JSONEncoder`). Each
/// user has a test comparing its bytes with `JSONEncoder`'s.
public enum SortedJSON {
    public indirect enum Value: Sendable {
        case string(String)
        case int(Int64)
        case bool(Bool)
        case array([Value])
        /// Keys in ascending byte order (as `.sortedKeys` writes them); absent (nil) members are left out,
        /// as Codable's `encodeIfPresent` does.
        case object([(String, Value?)])

        public static func strings(_ texts: [String]) -> Value { .array(texts.map(Value.string)) }
    }

    public static func encode(_ value: Value, reserving capacity: Int = 256) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity)
        write(value, to: &bytes)
        return bytes
    }

    private static func write(_ value: Value, to bytes: inout [UInt8]) {
        switch value {
        case .string(let text): JSONText.appendString(text, to: &bytes)
        case .int(let number): bytes += String(number).utf8
        case .bool(let flag): bytes += (flag ? "true" : "false").utf8
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for (key, member) in members {
                guard let member else { continue }
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                JSONText.appendString(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                write(member, to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}
