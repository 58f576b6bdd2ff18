import Foundation
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

@Suite("Crypto: RSA SHA-256, key loading, MD5")
struct RSATests {
    static let key = PrivateKey.generateRSA()!

    @Test("RSASSA-PKCS1-v1_5 SHA-256 round trip; any change to message or signature fails")
    func roundTrip() throws {
        let message = Array("POST /x\nc.t.{}".utf8)
        let signature = try #require(Self.key.signRSASHA256(message))
        let publicKey = try #require(Self.key.publicKey)
        #expect(signature.count == 256)
        #expect(publicKey.verifyRSASHA256(message: message, signature: signature))
        #expect(!publicKey.verifyRSASHA256(message: message + [0], signature: signature))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!publicKey.verifyRSASHA256(message: message, signature: flipped))
        #expect(!publicKey.verifyRSASHA256(message: message, signature: Array(signature.dropLast())))
        #expect(!publicKey.verifyRSASHA256(message: message, signature: []))
    }

    @Test("keys under 2048 bits and non-RSA keys never verify")
    func weakOrWrongKeys() throws {
        let small = try #require(PrivateKey.generateRSA(bits: 1024))
        let message = Array("m".utf8)
        let signature = try #require(small.signRSASHA256(message))
        #expect(small.bits == 1024)
        #expect(try #require(small.publicKey).verifyRSASHA256(message: message, signature: signature) == false)
        let ec = try #require(PrivateKey.generateP256())
        #expect(ec.signRSASHA256(message) == nil)
        #expect(try #require(ec.publicKey).verifyRSASHA256(message: message, signature: [UInt8](repeating: 1, count: 256)) == false)
    }

    @Test("public keys load from PEM SubjectPublicKeyInfo, PKCS#1, a certificate, DER and bare base64")
    func publicKeyForms() async throws {
        let message = Array("hello".utf8)
        let signature = try #require(Self.key.signRSASHA256(message))
        let pem = try #require(Self.key.publicKeyPEM)
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        let base64 = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = try #require(Base64.decodeStandard(base64))

        let pkcs1 = try await openssl(["rsa", "-pubin", "-RSAPublicKey_out"], input: pem)
        #expect(pkcs1.contains("BEGIN RSA PUBLIC KEY"))

        var builder = CertificateBuilder(subject: "Antom", notBefore: 1_577_836_800, notAfter: 2_208_988_800)
        builder.isCA = false
        let certificate = try #require(builder.issue(key: Self.key, issuer: nil, issuerKey: Self.key))
        let certificatePEM = "-----BEGIN CERTIFICATE-----\n" + Base64.encodeStandard(certificate.der) + "\n-----END CERTIFICATE-----\n"

        for form in [Array(pem.utf8), Array(pkcs1.utf8), Array(certificatePEM.utf8), der, Array(base64.utf8),
                     Array(("  " + base64.prefix(100) + "\n" + base64.dropFirst(100) + "\n").utf8)] {
            let loaded = try #require(PublicKey.load(pemOrDER: form), "\(String(decoding: form.prefix(30), as: UTF8.self))")
            #expect(loaded.verifyRSASHA256(message: message, signature: signature))
        }
        for bad in [Array("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----".utf8), Array("hello".utf8), der + [0],
                    Array("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----".utf8)] {
            #expect(PublicKey.load(pemOrDER: bad) == nil)
        }
    }

    @Test("private keys load from PEM and from Antom's bare base64 PKCS#8")
    func privateKeyForms() async throws {
        let pem = try await openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], input: "")
        let bare = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let fromPEM = try #require(PrivateKey.load(pemOrDER: Array(pem.utf8)))
        let fromBase64 = try #require(PrivateKey.load(pemOrDER: Array(bare.utf8)))
        let message = Array("m".utf8)
        #expect(try #require(fromPEM.publicKey).verifyRSASHA256(message: message, signature: try #require(fromBase64.signRSASHA256(message))))
        #expect(PrivateKey.load(pemOrDER: Array("nonsense".utf8)) == nil)
    }

    @Test("MD5 matches RFC 1321's test vectors")
    func md5() {
        #expect(Digest.hex(Digest.md5([UInt8]())) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Digest.hex(Digest.md5(Array("message digest".utf8))) == "f96b697d7cb7938d525a2f31aaf161d0")
    }

    func openssl(_ arguments: [String], input: String) async throws -> String {
        try await Subprocess.run("/usr/bin/openssl", arguments, stdin: Data(input.utf8)).output
    }
}
