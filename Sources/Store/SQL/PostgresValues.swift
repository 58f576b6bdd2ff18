import Foundation
import NIOCore
import PostgresNIO

/// `SQLValue`s to postgres-nio's bindings and result cells back to `SQLValue`s.
enum PostgresValues {
    /// Numbers and bytes go typed, in binary, so `SELECT $1` or `$1 IS NULL` resolve; text and NULL go
    /// untyped so the server casts them to the column's type (timestamptz, jsonb, ...), as libpq did.
    /// Arrays go in PostgreSQL's binary array format, element by element with postgres-nio's encoders.
    static func bind(_ value: SQLValue, into bindings: inout PostgresBindings) {
        switch value {
        case .null: bindings.appendNull()
        case .int(let number): bindings.append(number)
        case .double(let number): bindings.append(number)
        case .text(let text): bindings.append(UntypedText(text: text))
        case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
        case .textArray(let values): bindings.append(NullableArray(values))
        case .intArray(let values): bindings.append(NullableArray(values))
        }
    }

    /// A result cell by its column's type: integers and booleans (0/1) as `.int`, floating point and
    /// numeric as `.double`, bytea as `.blob`, void as `.null`, text types as `.text`; any other type
    /// comes as its binary form in a `.blob` (the store's tables use none).
    static func value(_ cell: PostgresCell) -> SQLValue {
        guard let bytes = cell.bytes else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8:
            return (try? cell.decode(Int64.self)).map(SQLValue.int) ?? .null
        case .bool:
            return (try? cell.decode(Bool.self)).map(SQLValue.bool) ?? .null
        case .float4, .float8:
            return (try? cell.decode(Double.self)).map(SQLValue.double) ?? .null
        case .numeric:
            // SUM and AVG of integers; "NaN" reads as a double too.
            return (try? cell.decode(Decimal.self)).flatMap { Double($0.description) }.map(SQLValue.double) ?? .double(.nan)
        case .void:
            return .null
        case .text, .varchar, .name, .bpchar, .char, .unknown, .json, .xml:
            return .text(String(buffer: bytes))
        default:
            return .blob(Array(buffer: bytes))
        }
    }
}

/// Text with no declared type (OID 0), in text format: the server infers the parameter's type from
/// where it is used.
private struct UntypedText: PostgresNonThrowingEncodable {
    let text: String
    static var psqlType: PostgresDataType { .null }
    static var psqlFormat: PostgresFormat { .text }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeString(text)
    }
}

/// A one-dimensional array whose elements may be NULL. postgres-nio encodes `[String]` and `[Int64]`
/// but not arrays of optionals, and the bulk statements need NULLs (a purchase without a user), so
/// this writes the array header itself and each element with postgres-nio's encoder.
private struct NullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable {
    let elements: [Element?]
    init(_ elements: [Element?]) { self.elements = elements }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        // Dimensions (0 for the empty array), whether any element is NULL, the element type.
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains(where: { $0 == nil }) ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue, as: UInt32.self)
        guard !elements.isEmpty else { return }
        // The one dimension's length and lower bound.
        buffer.writeInteger(Int32(elements.count), as: Int32.self)
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - lengthIndex - 4), at: lengthIndex, as: Int32.self)
        }
    }
}
