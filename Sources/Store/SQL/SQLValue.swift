/// A parameter or column value. Booleans are stored as integers 0/1 in both backends.
public enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case text(String)
    case double(Double)
    /// Bytes: an SQLite BLOB, a PostgreSQL bytea.
    case blob([UInt8])
    /// PostgreSQL only, as parameters: a text[] or bigint[] array, for set-based statements such as
    /// `unnest($1::text[], $2::bigint[])`. SQLite refuses them.
    case textArray([String?])
    case intArray([Int64?])

    /// A boolean as the integer 0 or 1.
    public static func bool(_ value: Bool) -> SQLValue { .int(value ? 1 : 0) }

    /// `.null` for nil, so optional fields bind without a switch.
    public init(_ value: Int64?) { self = value.map { .int($0) } ?? .null }
    public init(_ value: Int?) { self = value.map { .int(Int64($0)) } ?? .null }
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    public init(_ value: Double?) { self = value.map { .double($0) } ?? .null }
    public init(_ value: Bool?) { self = value.map { .bool($0) } ?? .null }
    public init(_ value: [UInt8]?) { self = value.map { .blob($0) } ?? .null }
}

extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByFloatLiteral,
    ExpressibleByNilLiteral
{
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
}
