import Events
import Toolkit

/// Antom's (Alipay+) signature, the one protocol its notifications, Tollgate's answers to them and
/// Tollgate's calls of its API share: SHA256withRSA over `POST <path>\n<Client-Id>.<time>.<body>`, sent
/// as `Signature: algorithm=RSA256,keyVersion=<n>,signature=<url-encoded base64>`.
public enum AntomSignature {
    public static let algorithm = "RSA256"

    /// What a `Signature` header says.
    public struct Header: Sendable {
        /// Nil when the header names no version (Antom then means the client's latest key).
        public let keyVersion: Int?
        public let signature: [UInt8]
    }

    /// Why a `Signature` header is not one Antom writes.
    public enum HeaderError: Error, Equatable {
        /// No header, or no `signature` in it.
        case missing(String)
        /// Not its grammar (name=value pairs, a numeric `keyVersion`, URL-encoded standard base64).
        case malformed(String)
        /// An `algorithm` other than RSA256.
        case unsupportedAlgorithm(String)
    }

    /// The bytes signed: `POST <path>\n<Client-Id>.<Request-Time or Response-Time>.<body>`.
    public static func signedContent(path: String, clientId: String, time: String, body: [UInt8]) -> [UInt8] {
        Array("POST \(path)\n\(clientId).\(time).".utf8) + body
    }

    /// A signed `Request-Time` or `Response-Time`: RFC 3339 with any offset (`2026-11-21T12:00:00+08:00`),
    /// or epoch milliseconds (`1763697600000`), the two forms Alipay+ and Antom send.
    public static func signedTime(_ text: String) -> Timestamp? {
        if let time = Timestamp(rfc3339: text) { return time }
        guard (10...16).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let number = Int64(text) else {
            return nil
        }
        return Timestamp(millisecondsSince1970: number)
    }

    /// `algorithm=RSA256[,keyVersion=<n>],signature=<url-encoded base64>` for a signature Tollgate makes.
    public static func header(signature: [UInt8], keyVersion: Int?) -> String {
        let version = keyVersion.map { ",keyVersion=\($0)" } ?? ""
        return "algorithm=\(algorithm)\(version),signature=\(PercentEncoding.encode(Base64.encodeStandard(signature)))"
    }

    public static func parse(_ header: String?) throws(HeaderError) -> Header {
        guard let header, !header.isEmpty else { throw .missing("the Signature header is missing") }
        var parameters: [String: Substring] = [:]
        for part in header.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = part.drop(while: { $0 == " " })
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw .malformed("the Signature header is not name=value pairs separated by commas")
            }
            let name = String(trimmed[..<equals])
            guard parameters.updateValue(trimmed[trimmed.index(after: equals)...], forKey: name) == nil else {
                throw .malformed("the Signature header gives \(name) twice")
            }
        }
        guard let encoded = parameters["signature"], !encoded.isEmpty else { throw .missing("the Signature header has no signature") }
        guard parameters["algorithm"] == Substring(algorithm) else {
            throw .unsupportedAlgorithm("the Signature algorithm must be \(algorithm)")
        }
        var keyVersion: Int?
        if let version = parameters["keyVersion"] {
            guard !version.isEmpty, version.utf8.count <= 9, version.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let number = Int(version) else {
                throw .malformed("keyVersion must be a number")
            }
            keyVersion = number
        }
        // Base64's '+', '/' and '=' are always escaped by the sender; raw ones mean another encoding.
        guard encoded.utf8.allSatisfy({ PercentEncoding.isUnreserved($0) || $0 == UInt8(ascii: "%") }),
              let base64 = PercentDecoding.decode(encoded.utf8, plusIsSpace: false),
              let signature = Base64.decodeStandard(base64[...]) else {
            throw .malformed("signature must be URL-encoded standard base64")
        }
        return Header(keyVersion: keyVersion, signature: signature)
    }
}
