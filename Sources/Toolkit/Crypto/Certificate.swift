import COpenSSL
import Foundation

/// An X.509 certificate (`X509`), parsed from DER or PEM. Immutable and shared read-only.
public final class Certificate: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The DER encoding exactly as given.
    public let der: [UInt8]

    public init?(der: [UInt8]) {
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            let x509 = d2i_X509(nil, &cursor, buffer.count)
            consumed = cursor.map { $0 - base } ?? 0
            return x509
        }
        guard let parsed else { ERR_clear_error(); return nil }
        // Trailing bytes after the certificate are refused: one encoding, one meaning.
        guard consumed == der.count else { X509_free(parsed); return nil }
        pointer = parsed
        self.der = der
        sha256Fingerprint = Digest.sha256(der)
    }

    /// The first certificate of a PEM text, or a DER blob (Apple distributes roots as DER `.cer`).
    public static func load(pemOrDER data: [UInt8]) -> Certificate? {
        if let text = String(validating: data, as: UTF8.self), text.contains("-----BEGIN CERTIFICATE-----") {
            return PEM.der(in: text, label: "CERTIFICATE").flatMap { Certificate(der: $0) }
        }
        return Certificate(der: data)
    }

    /// The DER encoding of an OpenSSL `X509` (one the caller owns, e.g. freshly signed).
    static func der(of x509: OpaquePointer) -> [UInt8]? {
        let length = i2d_X509(x509, nil)
        guard length > 0 else { ERR_clear_error(); return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509(x509, &cursor)
        }
        return der
    }

    deinit { X509_free(pointer) }

    /// The PEM text (for tools such as an OCSP responder that read files).
    public var pem: String {
        PEM.encode(der, label: "CERTIFICATE")
    }

    public let sha256Fingerprint: [UInt8]

    /// The subject's common name, if any.
    public var commonName: String? {
        guard let name = X509_get_subject_name(pointer) else { return nil }
        var buffer = [CChar](repeating: 0, count: 256)
        let length = X509_NAME_get_text_by_NID(name, NID_commonName, &buffer, Int32(buffer.count))
        guard length >= 0 else { return nil }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether an extension with this dotted OID is present (critical or not).
    public func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else { return false }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(pointer, object, -1) >= 0
    }

    /// notBefore and notAfter in seconds since 1970.
    public var validity: ClosedRange<Int64>? { Self.validity(of: pointer) }

    static func validity(of pointer: OpaquePointer) -> ClosedRange<Int64>? {
        guard let notBefore = X509_get0_notBefore(pointer), let notAfter = X509_get0_notAfter(pointer),
              let start = Self.seconds(notBefore), let end = Self.seconds(notAfter), start <= end else { return nil }
        return start...end
    }

    /// The OCSP responders named in the Authority Information Access extension.
    public var ocspResponderURLs: [String] {
        guard let stack = X509_get1_ocsp(pointer) else { return [] }
        defer { X509_email_free(stack) }
        return (0..<OPENSSL_sk_num(stack)).compactMap { index in
            OPENSSL_sk_value(stack, index).map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
        }
    }

    public var publicKey: PublicKey? {
        guard let key = X509_get_pubkey(pointer) else { ERR_clear_error(); return nil }
        return PublicKey(owning: key)
    }

    static func seconds(_ time: UnsafePointer<ASN1_TIME>) -> Int64? {
        var days: Int32 = 0
        var secs: Int32 = 0
        // Difference from the epoch (nil `from` means now, so pass an explicit epoch time).
        guard let epoch = ASN1_TIME_set(nil, 0) else { return nil }
        defer { ASN1_STRING_free(epoch) }
        guard ASN1_TIME_diff(&days, &secs, epoch, time) == 1 else { return nil }
        return Int64(days) * 86_400 + Int64(secs)
    }
}
