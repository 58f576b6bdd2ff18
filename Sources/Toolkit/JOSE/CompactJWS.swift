import Foundation

/// A JWS in compact serialization, split and decoded but not yet verified.
/// Only the shape is checked here; `alg` and keys are the caller's to enforce.
public struct CompactJWS: Sendable {
    public enum Failure: Error, Equatable {
        case malformed(String)
    }

    /// `BASE64URL(header) "." BASE64URL(payload)`, exactly as received: the signed bytes.
    public let signingInput: ArraySlice<UInt8>
    /// The header as received (base64url). Identical bytes mean an identical header, which lets a
    /// verifier cache what it concluded from it.
    public let headerSegment: ArraySlice<UInt8>
    public let payload: [UInt8]
    public let signature: [UInt8]

    public init(_ text: String) throws(Failure) {
        let bytes = Array(text.utf8)
        var dots: [Int] = []
        for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
            dots.append(index)
            guard dots.count <= 2 else { throw .malformed("a compact JWS has exactly three parts, found more") }
        }
        guard dots.count == 2 else { throw .malformed("a compact JWS has exactly three parts, found \(dots.count + 1)") }
        let headerPart = bytes[..<dots[0]], payloadPart = bytes[(dots[0] + 1)..<dots[1]], signaturePart = bytes[(dots[1] + 1)...]
        guard !headerPart.isEmpty, !payloadPart.isEmpty, !signaturePart.isEmpty else { throw .malformed("a JWS part is empty") }
        guard let payload = Base64.decodeURL(payloadPart) else { throw .malformed("the payload is not base64url") }
        guard let signature = Base64.decodeURL(signaturePart) else { throw .malformed("the signature is not base64url") }
        self.payload = payload
        self.signature = signature
        signingInput = bytes[..<dots[1]]
        headerSegment = signingInput[..<dots[0]]
    }

    /// The decoded header, a JSON object.
    public func header() throws(Failure) -> JSONValue {
        guard let bytes = Base64.decodeURL(headerSegment) else { throw .malformed("the header is not base64url") }
        guard let header = JSONValue.parse(bytes), header.object != nil else { throw .malformed("the header is not a JSON object") }
        return header
    }
}

extension CompactJWS {
    /// `BASE64URL(header) "." BASE64URL(claims) "." BASE64URL(signature)`, the JSON with sorted keys and
    /// unescaped slashes, `sign` given the signing input: the bearer JWTs Tollgate presents to Google
    /// (RS256) and Apple (ES256). Nil when encoding or signing fails.
    public static func signed(header: some Encodable, claims: some Encodable, sign: ([UInt8]) -> [UInt8]?) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let headerJSON = try? encoder.encode(header), let claimsJSON = try? encoder.encode(claims) else { return nil }
        let signingInput = Base64.encodeURL([UInt8](headerJSON)) + "." + Base64.encodeURL([UInt8](claimsJSON))
        guard let signature = sign(Array(signingInput.utf8)) else { return nil }
        return signingInput + "." + Base64.encodeURL(signature)
    }
}
