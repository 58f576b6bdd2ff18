import Foundation
import Toolkit
import Verifiers

/// A DER app receipt as Apple makes one: bundle id, creation date and in-app purchase receipts with
/// these transaction ids, signed as PKCS#7 by `signer`'s leaf and carrying its intermediate and root.
public enum TestReceipt {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// A creation date in the test chains' validity (2020-2040), as Apple's receipts carry it.
    public static let createdAt = "2024-03-01T12:00:00Z"

    public static func make(transactions: [(id: String, original: String)], signer: AppleTestChain, bundleId: String = "com.example",
                     createdAt: String = createdAt) throws -> String {
        try sign(content(transactions: transactions, bundleId: bundleId, createdAt: createdAt), signer: signer)
    }

    /// The receipt's signed content: the attribute set.
    public static func content(transactions: [(id: String, original: String)], bundleId: String = "com.example",
                        createdAt: String = createdAt) -> [UInt8] {
        let inApps = transactions.map { item in
            attribute(17, set([attribute(1703, utf8(item.id)), attribute(1705, utf8(item.original)), attribute(1702, utf8("pro.monthly"))]))
        }
        return set([attribute(2, utf8(bundleId)), attribute(12, ia5(createdAt))] + inApps)
    }

    /// `content` signed with the leaf's key, `certificates` (default the intermediate and root) carried beside the leaf.
    public static func sign(_ content: [UInt8], signer: AppleTestChain, certificate: Certificate? = nil, key: PrivateKey? = nil,
                     certificates: [Certificate]? = nil) throws -> String {
        guard let signed = PKCS7Container.sign(content, certificate: certificate ?? signer.leaf, key: key ?? signer.leafKey,
                                               chain: certificates ?? [signer.intermediate, signer.root]) else { throw Failure("PKCS#7 signing failed") }
        return Data(signed).base64EncodedString()
    }

    /// PKCS#7 signedData around `content` with no signer at all: what the old parser read ids from.
    public static func unsigned(_ content: [UInt8]) -> String {
        let data: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
        let signedData: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
        let inner = tlv(0x30, data + tlv(0xA0, tlv(0x04, content)))
        let body = tlv(0x30, integer(1) + tlv(0x31, []) + inner + tlv(0x31, []))
        return Data(tlv(0x30, signedData + tlv(0xA0, body))).base64EncodedString()
    }

    /// The receipt with the first occurrence of `from` in its DER replaced by `to` (same length):
    /// a genuine receipt whose signed content was edited.
    public static func tampered(_ base64: String, replacing from: String, with to: String) throws -> String {
        guard var der = Data(base64Encoded: base64).map({ Array($0) }) else { throw Failure("not base64") }
        let needle = Array(from.utf8)
        guard let at = der.indices.dropLast(needle.count - 1).first(where: { Array(der[$0..<$0 + needle.count]) == needle }) else {
            throw Failure("\(from) is not in the receipt")
        }
        der.replaceSubrange(at..<at + needle.count, with: Array(to.utf8))
        return Data(der).base64EncodedString()
    }

    public static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] { tlv(0x30, integer(type) + integer(1) + tlv(0x04, value)) }
    public static func set(_ items: [[UInt8]]) -> [UInt8] { tlv(0x31, items.flatMap { $0 }) }
    public static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    public static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }

    public static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat { bytes.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 } while rest > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    public static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        if count < 0x80 { return [tag, UInt8(count)] + content }
        var length: [UInt8] = []
        var rest = count
        while rest > 0 { length.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 }
        return [tag, 0x80 | UInt8(length.count)] + length + content
    }
}
