import Rejections
import Toolkit
/// Citcon's IPN signature: the names listed in `fields` plus `fields` itself, sorted, each with its
/// value exactly as received (no re-encoding), then the account's secret.
///  - UPI: `k1=v1&k2=v2&secret=<secret>`, SHA-256, lowercase hex.
///  - Legacy (CHOP): `k1=v1&k2=v2&token=<API token>`, MD5, lowercase hex.
struct CitconSignature {
    /// The signed names, sorted by their UTF-8 bytes.
    let signedNames: [String]
    /// The text before the secret: `k=v&...&` with the trailing `&`.
    private let base: String
    private let format: CitconBody.Format

    init(body: CitconBody) throws(Rejection) {
        guard let fields = body.values["fields"] else { throw Rejection(.missingField, "fields is missing") }
        guard case .text(let list) = fields else { throw Rejection(.invalidField, "fields is not text") }
        var names = Set(["fields"])
        for name in list.split(separator: ",", omittingEmptySubsequences: false) {
            guard !name.isEmpty else { throw Rejection(.invalidField, "fields lists an empty name") }
            names.insert(String(name))
        }
        signedNames = names.sorted(by: UTF8Order.precedes)
        var base = ""
        for name in signedNames {
            switch body.values[name] {
            case nil:
                throw Rejection(.missingSignedField, "\(name) is listed in fields but absent from the body")
            case .undefined(let kind)?:
                throw Rejection(.invalidSignedValue, "\(name) is \(kind); Citcon signs only text and numbers")
            case .text(let value)?:
                base += name + "=" + value + "&"
            }
        }
        self.base = base
        format = body.format
    }

    /// The lowercase hex signature `secret` gives (a UPI secret or a CHOP token, by format).
    func expected(secret: String) -> String {
        switch format {
        case .upi: Digest.hex(Digest.sha256(base + "secret=" + secret))
        case .legacy: Digest.hex(Digest.md5(Array((base + "token=" + secret).utf8)))
        }
    }

    /// The text that is hashed, for diagnostics and tests (contains the secret: never log it).
    func signedText(secret: String) -> String {
        base + (format == .upi ? "secret=" : "token=") + secret
    }
}
