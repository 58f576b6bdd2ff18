import Foundation
import COpenSSL

/// Message digests through OpenSSL's EVP interface.
public enum Digest {
    public static func sha256(_ bytes: some ContiguousBytes) -> [UInt8] { digest(bytes, EVP_sha256(), "SHA-256") }

    public static func sha256(_ text: String) -> [UInt8] { sha256(Array(text.utf8)) }

    /// MD5: broken for collisions, used only where a sender's protocol still signs with it (Citcon's legacy IPN).
    public static func md5(_ bytes: some ContiguousBytes) -> [UInt8] { digest(bytes, EVP_md5(), "MD5") }

    private static func digest(_ bytes: some ContiguousBytes, _ algorithm: OpaquePointer?, _ name: StaticString) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, algorithm, nil)
        }
        // EVP_Digest with a built-in algorithm only fails on allocation failure.
        precondition(ok == 1, "EVP_Digest(\(name)) failed")
        return Array(digest.prefix(Int(length)))
    }

    /// HMAC-SHA-256 of `message` under `key` (RFC 2104), through OpenSSL's one-shot `HMAC`.
    public static func hmacSHA256(key: [UInt8], message: some ContiguousBytes) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let done = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { input in
                HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count), input.baseAddress?.assumingMemoryBound(to: UInt8.self),
                     input.count, &mac, &length)
            }
        }
        // HMAC with a built-in digest only fails on allocation failure.
        precondition(done != nil, "HMAC(SHA-256) failed")
        return Array(mac.prefix(Int(length)))
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
