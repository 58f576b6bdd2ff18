import Toolkit
/// The `Signature` header of Alipay+ / Antom: `algorithm=RSA256,keyVersion=<n>,signature=<url-encoded base64>`.
struct AlipayPlusSignatureHeader {
    static let algorithm = "RSA256"

    /// Nil when the header names no version (Antom then means the client's latest key).
    let keyVersion: Int?
    let signature: [UInt8]

    init(_ header: String?) throws(Rejection) {
        guard let header, !header.isEmpty else { throw Rejection(.missingSignature, "the Signature header is missing") }
        var parameters: [String: Substring] = [:]
        for part in header.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = part.drop(while: { $0 == " " })
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw Rejection(.malformedSignature, "the Signature header is not name=value pairs separated by commas")
            }
            let name = String(trimmed[..<equals])
            guard parameters.updateValue(trimmed[trimmed.index(after: equals)...], forKey: name) == nil else {
                throw Rejection(.malformedSignature, "the Signature header gives \(name) twice")
            }
        }
        guard let encoded = parameters["signature"], !encoded.isEmpty else {
            throw Rejection(.missingSignature, "the Signature header has no signature")
        }
        guard parameters["algorithm"] == Substring(Self.algorithm) else {
            throw Rejection(.unsupportedAlg, "the Signature algorithm must be \(Self.algorithm)")
        }
        if let version = parameters["keyVersion"] {
            guard !version.isEmpty, version.utf8.count <= 9, version.allSatisfy(\.isASCIIDigit), let number = Int(version) else {
                throw Rejection(.malformedSignature, "keyVersion must be a number")
            }
            keyVersion = number
        } else {
            keyVersion = nil
        }
        // Base64's '+', '/' and '=' are always escaped by the sender; raw ones mean another encoding.
        guard encoded.utf8.allSatisfy(Self.isURLEncodedByte),
              let base64 = PercentDecoding.decode(encoded.utf8, plusIsSpace: false),
              let signature = Base64.decodeStandard(base64[...]) else {
            throw Rejection(.malformedSignature, "signature must be URL-encoded standard base64")
        }
        self.signature = signature
    }

    /// `algorithm=RSA256[,keyVersion=<n>],signature=<url-encoded base64>` for a signature Tollgate makes.
    static func format(signature: [UInt8], keyVersion: Int?) -> String {
        let version = keyVersion.map { ",keyVersion=\($0)" } ?? ""
        return "algorithm=\(algorithm)\(version),signature=\(urlEncode(Base64.encodeStandard(signature)))"
    }

    private static func isURLEncodedByte(_ byte: UInt8) -> Bool {
        isUnreserved(byte) || byte == UInt8(ascii: "%")
    }

    /// RFC 3986 unreserved characters, the only ones left unescaped.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    static func urlEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// The `Signature` header for Tollgate's own calls of Antom's API (Sources/Workers/Checkouts/Antom):
/// written as notification answers are, read as notifications are.
public enum AlipayPlusSignature {
    /// `algorithm=RSA256[,keyVersion=<n>],signature=<url-encoded base64>`.
    public static func header(signature: [UInt8], keyVersion: Int?) -> String {
        AlipayPlusSignatureHeader.format(signature: signature, keyVersion: keyVersion)
    }

    /// The signature bytes and key version of a header, or nil when it is not one Antom writes.
    public static func parse(_ header: String?) -> (signature: [UInt8], keyVersion: Int?)? {
        guard let parsed = try? AlipayPlusSignatureHeader(header) else { return nil }
        return (parsed.signature, parsed.keyVersion)
    }
}
