/// A parsed JSON document. Numbers keep the exact text they were written with (Citcon signs it).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses a whole body strictly (see `JSONParser`); nil when it is not one JSON value.
    public static func parse(_ bytes: [UInt8]) -> JSONValue? { JSONParser.parse(bytes) }

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// An integer written without fraction or exponent (or a string holding one).
    public var int64: Int64? {
        switch self {
        case .number(let number): number.int64
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// Any number, as a double (milliseconds with a fraction, from Xcode-signed payloads).
    public var double: Double? {
        if case .number(let number) = self { return Double(number.text) }
        return nil
    }

    public var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// Deterministic serialization (keys sorted by their UTF-8 bytes, no spaces), used to hash state,
    /// never to verify.
    public var canonical: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .number(let number): return number.text
        case .string(let value): return Self.quote(value)
        case .array(let items): return "[" + items.map(\.canonical).joined(separator: ",") + "]"
        case .object(let object):
            return "{" + object.keys.sorted(by: UTF8Order.precedes).map { Self.quote($0) + ":" + (object[$0]?.canonical ?? "null") }.joined(separator: ",") + "}"
        }
    }

    private static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// A JSON number exactly as written.
public struct JSONNumber: Sendable, Equatable, Hashable {
    public let text: String
    /// Written without fraction or exponent.
    public let isIntegral: Bool

    public var int64: Int64? { isIntegral ? Int64(text) : nil }
}
