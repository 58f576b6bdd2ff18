import COpenSSL
import Foundation

/// An OpenSSL private key: generated, or loaded from PEM. Signs ES256 (raw r||s, as JWS wants)
/// and RSA SHA-256. Used for Alipay+ response signatures, Play API tokens, and to sign test traffic.
public final class PrivateKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(owning pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    public static func generateP256() -> PrivateKey? {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1 else { return nil }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(context, &key) == 1, let key else { ERR_clear_error(); return nil }
        return PrivateKey(owning: key)
    }

    public static func generateRSA(bits: Int32 = 2048) -> PrivateKey? {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, bits) == 1 else { return nil }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(context, &key) == 1, let key else { ERR_clear_error(); return nil }
        return PrivateKey(owning: key)
    }

    /// PKCS#8 or traditional PEM.
    public convenience init?(pem: String) {
        let key: OpaquePointer? = pem.withCString { text in
            guard let bio = BIO_new_mem_buf(text, -1) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { ERR_clear_error(); return nil }
        self.init(owning: key)
    }

    /// Unencrypted PKCS#8 PEM (for tools such as an OCSP responder that read key files).
    public var pem: String? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, pointer, nil, nil, 0, nil, nil) == 1 else { ERR_clear_error(); return nil }
        var bytes: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &bytes)
        guard length > 0, let bytes else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: length), as: UTF8.self)
    }

    /// A key from a file's bytes: PEM (PKCS#8 or traditional), DER, or bare base64 of PKCS#8
    /// (as Antom's dashboard shows the merchant private key).
    public static func load(pemOrDER data: [UInt8]) -> PrivateKey? {
        if let text = String(validating: data, as: UTF8.self) {
            if text.contains("-----BEGIN") { return PrivateKey(pem: text) }
            if let der = PEM.base64Body(text[...]) { return PrivateKey(der: der) }
        }
        return PrivateKey(der: data)
    }

    /// DER PKCS#8 or traditional; trailing bytes are refused.
    public convenience init?(der: [UInt8]) {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let key = d2i_AutoPrivateKey(nil, &cursor, buffer.count) else { ERR_clear_error(); return nil }
            guard cursor.map({ $0 - base }) == buffer.count else { EVP_PKEY_free(key); return nil }
            return key
        }
        guard let key else { return nil }
        self.init(owning: key)
    }

    public var isRSA: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_RSA }

    /// An EC key on P-256 (prime256v1), the curve ES256 names; other 256-bit curves (secp256k1,
    /// brainpool) are not.
    public var isP256: Bool {
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1, length < name.count else { ERR_clear_error(); return false }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
    }

    /// The key size in bits (the modulus for RSA).
    public var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// The PEM `PUBLIC KEY` (SubjectPublicKeyInfo) of the matching public key, e.g. to hand to a sender.
    public var publicKeyPEM: String? {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(pointer, &der)
        guard length > 0, let der else { return nil }
        defer { CRYPTO_free(der, #fileID, #line) }
        return PEM.encode(Array(UnsafeBufferPointer(start: der, count: Int(length))), label: "PUBLIC KEY")
    }

    /// The matching public key.
    public var publicKey: PublicKey? {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(pointer, &der)
        guard length > 0, let der else { return nil }
        defer { CRYPTO_free(der, #fileID, #line) }
        var cursor: UnsafePointer<UInt8>? = UnsafePointer(der)
        guard let key = d2i_PUBKEY(nil, &cursor, Int(length)) else { return nil }
        return PublicKey(owning: key)
    }

    /// ES256: the 64-byte raw r||s signature of SHA-256(message).
    public func signES256(_ message: [UInt8]) -> [UInt8]? {
        guard let der = digestSign(message), let sig = der.withUnsafeBufferPointer({ buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }) else { return nil }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        guard BN_bn2binpad(r, &raw, 32) == 32 else { return nil }
        let ok = raw.withUnsafeMutableBufferPointer { BN_bn2binpad(s, $0.baseAddress.map { $0 + 32 }, 32) == 32 }
        return ok ? raw : nil
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 (JWS RS256, Alipay+ "RSA256"); nil for a key that is not RSA.
    public func signRSASHA256(_ message: [UInt8]) -> [UInt8]? {
        guard isRSA else { return nil }
        return digestSign(message)
    }

    // MARK: Ed25519 (Standard Webhooks' `v1a` signatures)

    public static func generateEd25519() -> PrivateKey? {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { ERR_clear_error(); return nil }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(context, &key) == 1, let key else { ERR_clear_error(); return nil }
        return PrivateKey(owning: key)
    }

    /// An Ed25519 key from its 32-byte seed (RFC 8032's private key); nil for any other length.
    public convenience init?(ed25519Seed seed: [UInt8]) {
        guard seed.count == 32, let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, seed.count) else {
            ERR_clear_error()
            return nil
        }
        self.init(owning: key)
    }

    public var isEd25519: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_ED25519 }

    /// The 32-byte seed of an Ed25519 key (nil for other keys).
    public var ed25519Seed: [UInt8]? { raw(EVP_PKEY_get_raw_private_key) }

    /// The 32-byte public key of an Ed25519 key (nil for other keys).
    public var ed25519PublicKey: [UInt8]? { raw(EVP_PKEY_get_raw_public_key) }

    /// The 64-byte Ed25519 signature of `message` (PureEdDSA: no digest first); nil for other keys.
    public func signEd25519(_ message: [UInt8]) -> [UInt8]? {
        guard isEd25519, let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, nil, nil, pointer) == 1 else { ERR_clear_error(); return nil }
        var length = 64
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1, length == 64 else { ERR_clear_error(); return nil }
        return signature
    }

    private func raw(_ read: (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?) -> Int32) -> [UInt8]? {
        guard isEd25519 else { return nil }
        var length = 32
        var bytes = [UInt8](repeating: 0, count: length)
        guard read(pointer, &bytes, &length) == 1, length == 32 else { ERR_clear_error(); return nil }
        return bytes
    }

    /// SHA-256 with the key's native scheme: PKCS#1 v1.5 for RSA, a DER ECDSA signature for EC.
    private func digestSign(_ message: [UInt8]) -> [UInt8]? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pointer) == 1 else { ERR_clear_error(); return nil }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { ERR_clear_error(); return nil }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { ERR_clear_error(); return nil }
        return Array(signature.prefix(length))
    }
}
