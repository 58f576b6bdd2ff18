import COpenSSL
import Foundation

/// An OpenSSL public key (`EVP_PKEY`), immutable once built, so one instance is shared across
/// threads (OpenSSL 3 keys are reference counted and safe for concurrent verification).
public final class PublicKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of one reference.
    init(owning pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// A key from PEM text (`-----BEGIN PUBLIC KEY-----`, SubjectPublicKeyInfo).
    public convenience init?(pem: String) {
        let key: OpaquePointer? = pem.withCString { text in
            guard let bio = BIO_new_mem_buf(text, -1) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else { ERR_clear_error(); return nil }
        self.init(owning: key)
    }

    /// True for an elliptic-curve key on P-256, the only curve ES256 allows.
    public var isP256: Bool {
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1 else { return false }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
    }

    public var isRSA: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_RSA }

    /// The key size in bits (the modulus for RSA).
    public var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// RSA keys shorter than this are refused for verification (NIST SP 800-131A).
    public static let minimumRSABits = 2048

    /// A key from a file's bytes, in any form senders publish: PEM `PUBLIC KEY` (SubjectPublicKeyInfo),
    /// PEM `RSA PUBLIC KEY` (PKCS#1), PEM `CERTIFICATE` (its subject key), DER SubjectPublicKeyInfo,
    /// or bare base64 of SubjectPublicKeyInfo (as Antom's dashboard shows it).
    public static func load(pemOrDER data: [UInt8]) -> PublicKey? {
        guard let text = String(validating: data, as: UTF8.self) else { return PublicKey(subjectPublicKeyInfo: data) }
        if text.contains("-----BEGIN CERTIFICATE-----") {
            return Certificate.load(pemOrDER: data)?.publicKey
        }
        if let der = PEM.der(in: text, label: "PUBLIC KEY") { return PublicKey(subjectPublicKeyInfo: der) }
        if let der = PEM.der(in: text, label: "RSA PUBLIC KEY") { return PublicKey(pkcs1RSA: der) }
        if text.contains("-----BEGIN") { return nil }
        if let der = PEM.base64Body(text[...]) { return PublicKey(subjectPublicKeyInfo: der) }
        return PublicKey(subjectPublicKeyInfo: data)
    }

    /// DER SubjectPublicKeyInfo; trailing bytes are refused.
    public convenience init?(subjectPublicKeyInfo der: [UInt8]) {
        guard let key = Self.decode(der, { cursor, count in d2i_PUBKEY(nil, &cursor, count) }) else { return nil }
        self.init(owning: key)
    }

    /// DER PKCS#1 `RSAPublicKey`; trailing bytes are refused.
    public convenience init?(pkcs1RSA der: [UInt8]) {
        guard let key = Self.decode(der, { cursor, count in d2i_PublicKey(EVP_PKEY_RSA, nil, &cursor, count) }) else { return nil }
        self.init(owning: key)
    }

    private static func decode(_ der: [UInt8], _ parse: (inout UnsafePointer<UInt8>?, Int) -> OpaquePointer?) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let key = parse(&cursor, buffer.count) else { ERR_clear_error(); return nil }
            guard cursor.map({ $0 - base }) == buffer.count else { EVP_PKEY_free(key); return nil }
            return key
        }
    }

    /// ES256: ECDSA P-256 with SHA-256 over `message`; `signature` is the JWS form, raw r||s (64 bytes),
    /// converted to DER for OpenSSL.
    public func verifyES256(message: some ContiguousBytes, signature: [UInt8]) -> Bool {
        guard isP256, signature.count == 64, let der = Self.derSignature(rawP256: signature) else { return false }
        return verify(message: message, signature: der, digest: EVP_sha256())
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 over `message` (JWS RS256, Alipay+ "RSA256", SHA256withRSA).
    /// False for anything but an RSA key of at least `minimumRSABits`, or a signature of another length.
    public func verifyRSASHA256(message: some ContiguousBytes, signature: [UInt8]) -> Bool {
        guard isRSA, bits >= Self.minimumRSABits, signature.count == (bits + 7) / 8 else { return false }
        return verify(message: message, signature: signature, digest: EVP_sha256())
    }

    private func verify(message: some ContiguousBytes, signature: [UInt8], digest: OpaquePointer?) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, pointer) == 1 else { ERR_clear_error(); return false }
        let result = message.withUnsafeBytes { bytes in
            EVP_DigestVerify(context, signature, signature.count, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    /// r||s (32 + 32 bytes, big-endian) to a DER `ECDSA-Sig-Value` (SEQUENCE of two INTEGERs),
    /// written directly: the lengths are small and fixed, and this runs once per signature.
    static func derSignature(rawP256 raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64 else { return nil }
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop(while: { $0 == 0 }))
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }
}
