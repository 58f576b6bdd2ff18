import Config
import Events
import Foundation
@testable import Toolkit
@testable import Verifiers

/// Builds Citcon IPNs and signs them the way Citcon describes, independently of the code under test
/// (only the hash primitives are shared).
enum CitconFixtures {
    static let settings: CitconSettings = {
        var settings = CitconSettings()
        settings.accounts = [CitconSettings.Account(name: "alpha", secrets: ["upi-old", "upi-new"], tokens: ["chop-old", "chop-new"]),
                             CitconSettings.Account(name: "beta", secrets: ["beta-secret"], tokens: ["beta-token"])]
        return settings
    }()

    static let source = CitconSource(settings: settings)
    static let receivedAt = Timestamp(rfc3339: "2026-11-21T12:00:00.000Z")!

    static func request(_ body: String, contentType: String? = "application/json", path: String = "/webhooks/citcon") -> WebhookRequest {
        var headers = HeaderFields()
        if let contentType { headers.append(name: "Content-Type", value: contentType) }
        return WebhookRequest(path: path, headers: headers, body: Array(body.utf8), receivedAt: receivedAt)
    }

    /// UPI members as (name, JSON literal), in the order written.
    static let charge: [(String, String)] = [
        ("id", #""d0c1""#), ("transaction_type", #""charge""#), ("reference", #""order-7""#), ("amount", "1999"),
        ("currency", #""USD""#), ("status", #""success""#), ("time_created", #""2026-11-20T10:00:00.000Z""#),
        ("time_completed", #""2026-11-20T10:00:05.000Z""#), ("payment_method", #""alipay""#), ("amount_captured", #""""#),
    ]

    /// A UPI body signed with `secret` over `fields` (default: every member), `sign` last.
    static func upi(_ members: [(String, String)] = charge, fields: [String]? = nil, secret: String = "upi-new",
                    sign: String? = nil, replacing replacements: [String: String] = [:]) -> String {
        let fieldList = (fields ?? members.map(\.0)).joined(separator: ",")
        let signed = Set((fields ?? members.map(\.0)) + ["fields"])
        var values: [String: String] = ["fields": fieldList]
        for (name, literal) in members {
            values[name] = literal.hasPrefix("\"") ? String(literal.dropFirst().dropLast()) : literal
        }
        let text = signed.sorted().map { "\($0)=\(values[$0] ?? "")" }.joined(separator: "&") + "&secret=" + secret
        let signature = sign ?? Digest.hex(Digest.sha256(text))
        // Replacements change members after signing (tampering).
        let written = members.map { #""\#($0.0)":\#(replacements[$0.0] ?? $0.1)"# }
        return "{" + (written + [#""fields":"\#(fieldList)""#, #""sign":"\#(signature)""#]).joined(separator: ",") + "}"
    }

    static let legacyCharge: [(String, String)] = [
        ("id", "c-42"), ("reference", "order-9"), ("amount", "500"), ("currency", "JPY"), ("notify_status", "success"),
        ("time", "2026-11-20T09:00:00Z"), ("notify_id", "n-1"),
    ]

    /// A legacy (CHOP) form body: MD5 of the sorted `k=v&` pairs then `token=<token>`, values before form encoding.
    static func legacy(_ pairs: [(String, String)] = legacyCharge, fields: [String]? = nil, token: String = "chop-new",
                       replacing replacements: [String: String] = [:]) -> String {
        let fieldList = (fields ?? pairs.map(\.0)).joined(separator: ",")
        var values = Dictionary(pairs, uniquingKeysWith: { a, _ in a })
        values["fields"] = fieldList
        let signed = Set((fields ?? pairs.map(\.0)) + ["fields"]).sorted()
        let text = signed.map { "\($0)=\(values[$0] ?? "")&" }.joined() + "token=" + token
        let signature = Digest.hex(Digest.md5(Array(text.utf8)))
        let written = pairs.map { ($0.0, replacements[$0.0] ?? $0.1) } + [("fields", fieldList), ("sign", signature)]
        return written.map { formEncode($0.0) + "=" + formEncode($0.1) }.joined(separator: "&")
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~ ")
        return (text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text).replacingOccurrences(of: " ", with: "+")
    }
}
