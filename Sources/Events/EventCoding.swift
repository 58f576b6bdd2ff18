import Foundation

/// The one JSON encoding of events, shared by the gateway, `tollgate verify` and the workers.
public enum EventCoding {
    public static func encode(_ event: NormalizedEvent) -> [UInt8] {
        EventJSONWriter.encode(event)
    }

    /// What `encode` must equal, byte for byte: the Codable encoding with sorted keys.
    static func encodeWithCodable(_ event: NormalizedEvent) -> [UInt8] {
        // Encoding a value type with only strings, numbers and booleans cannot fail.
        (try? encoder.encode(event)).map(Array.init) ?? []
    }

    public static func encodeArray(_ events: [NormalizedEvent], pretty: Bool = false) -> String {
        let encoder = pretty ? prettyEncoder : encoder
        guard let data = try? encoder.encode(events) else { return "[]" }
        return String(decoding: data, as: UTF8.self)
    }

    public static func decode(_ bytes: some Collection<UInt8>) throws -> NormalizedEvent {
        try JSONDecoder().decode(NormalizedEvent.self, from: Data(bytes))
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    private static let prettyEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return encoder
    }()
}
