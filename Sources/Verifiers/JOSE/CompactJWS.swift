/// A JWS in compact serialization, split and decoded but not yet verified.
/// Only the shape is checked here; `alg` and keys are the caller's to enforce.
public struct CompactJWS: Sendable {
    public enum Failure: Error, Equatable {
        case malformed(String)
    }

    /// `BASE64URL(header) "." BASE64URL(payload)`, exactly as received: the signed bytes.
    public let signingInput: [UInt8]
    public let header: JSONValue
    public let payload: [UInt8]
    public let signature: [UInt8]

    public init(_ text: Substring) throws(Failure) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("a compact JWS has exactly three parts, found \(parts.count)") }
        guard !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else { throw .malformed("a JWS part is empty") }
        guard let headerBytes = Base64.decodeURL(parts[0]) else { throw .malformed("the header is not base64url") }
        guard let payload = Base64.decodeURL(parts[1]) else { throw .malformed("the payload is not base64url") }
        guard let signature = Base64.decodeURL(parts[2]) else { throw .malformed("the signature is not base64url") }
        guard let header = JSONValue.parse(headerBytes), header.object != nil else {
            throw .malformed("the header is not a JSON object")
        }
        self.header = header
        self.payload = payload
        self.signature = signature
        signingInput = Array(text[text.startIndex..<parts[1].endIndex].utf8)
    }

    public var algorithm: String? { header["alg"]?.string }
}
