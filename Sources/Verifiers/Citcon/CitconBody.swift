import Rejections
import Toolkit
/// A Citcon IPN body reduced to what its signature covers: names and their text values.
/// UPI IPNs are flat JSON objects; legacy (CHOP) IPNs are form-encoded.
struct CitconBody {
    enum Format: String {
        case upi
        case legacy
    }

    /// One value as the signature sees it.
    enum Value {
        /// Text exactly as received: a JSON string's value, a JSON number as written, a form value.
        case text(String)
        /// A JSON null, boolean, object or array: Citcon defines no text for these in a signature.
        case undefined(kind: String)
    }

    let format: Format
    let values: [String: Value]

    /// The delivery's text value of `name`, if present and textual.
    subscript(name: String) -> String? {
        if case .text(let text)? = values[name] { return text }
        return nil
    }

    static func parse(_ bytes: [UInt8], format: Format) throws(Rejection) -> CitconBody {
        switch format {
        case .upi:
            guard let object = JSONValue.parse(bytes)?.object else {
                throw Rejection(.malformedJSON, "the body is not a JSON object")
            }
            var values: [String: Value] = [:]
            for (name, value) in object {
                switch value {
                case .string(let text): values[name] = .text(text)
                case .number(let number): values[name] = .text(number.text)
                case .null: values[name] = .undefined(kind: "null")
                case .bool: values[name] = .undefined(kind: "a boolean")
                case .object: values[name] = .undefined(kind: "an object")
                case .array: values[name] = .undefined(kind: "an array")
                }
            }
            return CitconBody(format: .upi, values: values)
        case .legacy:
            guard let form = FormBody(bytes) else {
                throw Rejection(.malformedForm, "the body is not form-encoded text (bad % escape, invalid UTF-8 or a name given twice)")
            }
            return CitconBody(format: .legacy, values: form.values.mapValues { .text($0) })
        }
    }

    /// JSON when the content type says so, form when it says so; otherwise (Citcon's content types
    /// vary) a body starting with `{` is the UPI JSON.
    static func format(mediaType: MediaType, body: [UInt8]) -> Format {
        switch mediaType {
        case .json: return .upi
        case .form: return .legacy
        case .generic, .other:
            let first = body.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) })
            return first == UInt8(ascii: "{") ? .upi : .legacy
        }
    }
}
