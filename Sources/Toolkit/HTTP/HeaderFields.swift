/// Request headers with case-insensitive lookup.
public struct HeaderFields: Sendable {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

    public subscript(name: String) -> String? {
        fields.first(where: { Self.sameName($0.name, name) })?.value
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// ASCII case-insensitive (header names are ASCII), without allocating: this runs for every
    /// header on every lookup of every request.
    private static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { lowercased($0) == lowercased($1) }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }

    public mutating func append(name: String, value: String) { fields.append((name, value)) }
}
