/// A sender's name: its route `/webhooks/<name>`, its raw topic, its configuration section
/// `sources.<name>` and its metric label. Each sender's folder declares its own (`SourceName.apple`
/// in Sources/Verifiers/Apple) and `SenderCatalog` lists the senders, so nothing else enumerates them.
public struct SourceName: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    public static func < (lhs: SourceName, rhs: SourceName) -> Bool { lhs.rawValue < rhs.rawValue }
}
