/// How a route judges `Content-Type`. Senders are inconsistent, so a missing or generic type is
/// not a rejection and the body decides; only a type that contradicts the route is (415).
public enum MediaType: Sendable, Equatable {
    case json
    case form
    /// Missing, `text/plain`, `application/octet-stream`, `*/*`: says nothing about the body.
    case generic
    case other(String)

    public init(contentType: String?) {
        guard let contentType else { self = .generic; return }
        let beforeParameters = contentType.utf8.prefix(while: { $0 != UInt8(ascii: ";") })
        let trimmed = beforeParameters.drop(while: { $0 == 0x20 || $0 == 0x09 }).reversed().drop(while: { $0 == 0x20 || $0 == 0x09 }).reversed()
        let essence = String(decoding: trimmed, as: UTF8.self).lowercased()
        switch essence {
        case "application/json", "text/json": self = .json
        case _ where essence.hasPrefix("application/") && essence.hasSuffix("+json"): self = .json
        case "application/x-www-form-urlencoded": self = .form
        case "", "text/plain", "application/octet-stream", "*/*": self = .generic
        default: self = .other(essence)
        }
    }
}
