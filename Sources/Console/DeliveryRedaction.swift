import Foundation
import Toolkit

/// A sender's delivery as an operator's page shows it: its JSON (or form) indented for reading, what it
/// wraps opened (a JWS's payload, a Pub/Sub message's base64 `data`), and every field that may be a
/// credential withheld: a name holding `token`, `password`, `secret` or `authorization`, or exactly
/// `sign`/`signature` (Google's purchase token, Iaptic's password, Citcon's and Antom's signatures), and a
/// `data` string that does not open. The raw topics keep the bytes as they arrived; this is only how a
/// page shows them. Anything else (JSON that does not parse, text that is no form) is not shown at all.
public enum DeliveryRedaction {
    public static let withheld = "(withheld)"

    /// Whether a field (or kept header) of this name may hold a credential.
    public static func withholds(_ name: String) -> Bool {
        let lower = name.lowercased()
        return ["token", "password", "secret", "authorization"].contains { lower.contains($0) } || lower == "sign" || lower == "signature"
    }

    public static func pretty(_ body: [UInt8]) -> String {
        // A body that starts as JSON is JSON: one that does not parse is not shown (never read as a form).
        let first = body.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) else {
                return "(\(body.count) bytes of JSON that does not parse: not shown)"
            }
            return encode(open(object, depth: 0))
        }
        // A form names its fields `name=value`; text without one is not a form.
        if body.contains(UInt8(ascii: "=")), let form = FormBody(body), !form.values.isEmpty,
           !form.values.keys.contains(where: { $0.unicodeScalars.contains { $0.properties.generalCategory == .control } }) {
            return encode(open(form.values, depth: 0))
        }
        return "(\(body.count) bytes that are neither JSON nor a form: not shown)"
    }

    /// The value with wrapped documents opened and credentials withheld; nesting past 16 levels is not opened further.
    static func open(_ value: Any, depth: Int) -> Any {
        guard depth < 16 else { return "(nested too deep to show)" }
        switch value {
        case let object as [String: Any]:
            var shown: [String: Any] = [:]
            for (key, inner) in object {
                if withholds(key) {
                    shown[key] = withheld
                } else if key == "data", let text = inner as? String {
                    // Pub/Sub's message data (Google's notification, with its purchase token): opened, or withheld.
                    shown[key] = decodedJSON(base64: text).map { open($0, depth: depth + 1) } ?? withheld
                } else {
                    shown[key] = open(inner, depth: depth + 1)
                }
            }
            return shown
        case let array as [Any]:
            return array.map { open($0, depth: depth + 1) }
        case let text as String:
            if let payload = jwsPayload(text) { return ["(a JWS; its payload)": open(payload, depth: depth + 1)] }
            return text
        default:
            return value
        }
    }

    /// A compact JWS's payload as JSON (its signature was the gateway's to check; a page shows what it says).
    static func jwsPayload(_ text: String) -> Any? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, text.utf8.count < 1_000_000,
              let header = Base64.decodeURL(parts[0]).flatMap({ try? JSONSerialization.jsonObject(with: Data($0)) }) as? [String: Any],
              header["alg"] != nil,
              let payload = Base64.decodeURL(parts[1]) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(payload))
    }

    static func decodedJSON(base64 text: String) -> Any? {
        // Standard base64, as Pub/Sub writes it, or the URL-safe alphabet the gateway also takes.
        let unpadded = text.hasSuffix("=") ? String(text.prefix { $0 != "=" }) : text
        guard let bytes = Base64.decodeStandard(text) ?? Base64.decodeURL(unpadded[...]),
              let object = try? JSONSerialization.jsonObject(with: Data(bytes)),
              object is [String: Any] || object is [Any] else { return nil }
        return object
    }

    static func encode(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value,
                                                     options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return "(could not be shown)" }
        return String(decoding: data, as: UTF8.self)
    }
}
