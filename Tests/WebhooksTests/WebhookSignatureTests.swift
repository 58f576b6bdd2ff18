import Foundation
import TestSupport
import Testing
import Toolkit
import Webhooks

/// Outbound webhooks are signed as the Standard Webhooks specification says, and verified here by
/// implementations nobody in this project wrote: the `standardwebhooks` package from PyPI (`v1`, in the
/// deploy tools' virtualenv that `make test` installs) and the `openssl` command (`v1a`, Ed25519).
@Suite("Standard Webhooks signatures")
struct WebhookSignatureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/deploy-venv/bin/python").path

    @Test("the specification's example: its secret, id, timestamp and body give its signature")
    func specificationExample() throws {
        let headers = try #require(WebhookSignature.headers(id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestampSeconds: 1_614_265_330,
                                                            body: Array(#"{"test": 2432232314}"#.utf8),
                                                            secrets: [WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")]))
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers.map(\.value) == ["msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="])
    }

    @Test("two secrets (a rotation): the standardwebhooks package verifies with either alone, and refuses another secret, another body or an old timestamp")
    func verifiedByStandardWebhooks() async throws {
        let old = WebhookSecret.generate()
        let new = WebhookSecret.generate()
        let body = #"{"specversion":"1.0","id":"msg_x","type":"subscription.renewed","data":{"note":"\u00e9\u2028 unicode"}}"#
        let now = Int64(Date().timeIntervalSince1970)
        let headers = try #require(WebhookSignature.headers(id: "msg_0123abcd", timestampSeconds: now, body: Array(body.utf8),
                                                            secrets: [try WebhookSecret(old), try WebhookSecret(new)]))
        #expect(try await Self.verify(secret: old, headers: headers, body: body) == "ok")
        #expect(try await Self.verify(secret: new, headers: headers, body: body) == "ok")
        #expect(try await Self.verify(secret: WebhookSecret.generate(), headers: headers, body: body) == "No matching signature found")
        #expect(try await Self.verify(secret: new, headers: headers, body: body + " ") == "No matching signature found")
        let stale = try #require(WebhookSignature.headers(id: "msg_0123abcd", timestampSeconds: now - 600, body: Array(body.utf8),
                                                          secrets: [try WebhookSecret(new)]))
        #expect(try await Self.verify(secret: new, headers: stale, body: body) == "Message timestamp too old")
    }

    @Test("an Ed25519 key signs v1a beside v1: openssl verifies it with the whpk_ public key, and not over another body")
    func ed25519VerifiedByOpenSSL() async throws {
        let key = try WebhookSigningKey(try #require(WebhookSigningKey.generate()))
        let body = Array(#"{"id":"msg_ed"}"#.utf8)
        let headers = try #require(WebhookSignature.headers(id: "msg_ed", timestampSeconds: 1_700_000_000, body: body,
                                                            secrets: [try WebhookSecret(WebhookSecret.generate())], keys: [key]))
        let signatures = try #require(headers.last?.value).split(separator: " ")
        #expect(signatures.count == 2 && signatures[0].hasPrefix("v1,") && signatures[1].hasPrefix("v1a,"))
        let signature = try #require(Base64.decodeStandard(signatures[1].dropFirst(4)))
        #expect(signature.count == 64)
        let publicKey = try #require(Base64.decodeStandard(key.publicKey.dropFirst(WebhookSigningKey.publicPrefix.count)))
        #expect(publicKey.count == 32)
        let content = Array("msg_ed.1700000000.".utf8) + body
        #expect(try await Self.opensslVerifies(publicKey: publicKey, content: content, signature: signature))
        #expect(try await !Self.opensslVerifies(publicKey: publicKey, content: content + [0x20], signature: signature))
    }

    @Test("secrets, keys and ids a receiver could read otherwise are refused", arguments: [
        "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS-",
        "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==", "whsec_" + String(repeating: "A", count: 88), "whsec_MfKQ9r8G KYqrTwjUPD8ILPZIo2LaLaSw",
    ])
    func refusedSecrets(text: String) {
        #expect(throws: WebhookKeyError.self) { try WebhookSecret(text) }
    }

    @Test("a signing key is a 32-byte seed, or seed and its own public key")
    func signingKeys() throws {
        let seed = (0..<32).map { UInt8($0) }
        let key = try WebhookSigningKey("whsk_" + Base64.encodeStandard(seed))
        let publicKey = try #require(Base64.decodeStandard(key.publicKey.dropFirst(5)))
        #expect(try WebhookSigningKey("whsk_" + Base64.encodeStandard(seed + publicKey)).publicKey == key.publicKey)
        #expect(throws: WebhookKeyError.self) { try WebhookSigningKey("whsk_" + Base64.encodeStandard(seed + Array(repeating: 7, count: 32))) }
        #expect(throws: WebhookKeyError.self) { try WebhookSigningKey("whsk_" + Base64.encodeStandard(Array(seed.prefix(31)))) }
        #expect(throws: WebhookKeyError.self) { try WebhookSigningKey("whsec_" + Base64.encodeStandard(seed)) }
        for id in ["", "msg.1", "msg 1", "msg/1", "é", String(repeating: "a", count: 256)] {
            #expect(WebhookSignature.headers(id: id, timestampSeconds: 1, body: [], secrets: [try WebhookSecret(WebhookSecret.generate())]) == nil, "\(id)")
        }
        #expect(WebhookSignature.headers(id: "msg_1", timestampSeconds: 1, body: [], secrets: []) == nil, "nothing to sign with")
        // What a log line would print shows neither secret.
        let secret = try WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        #expect("\(secret)" == "whsec_(24 bytes)")
        #expect(!String(reflecting: key).contains(Base64.encodeStandard(seed)) && "\(key)" == key.publicKey)
    }

    /// What `standardwebhooks.Webhook(secret).verify(body, headers)` says: "ok" or its exception's message.
    static func verify(secret: String, headers: [(name: String, value: String)], body: String) async throws -> String {
        let script = """
            import json, sys
            from standardwebhooks.webhooks import Webhook
            request = json.load(sys.stdin)
            try:
                Webhook(request["secret"]).verify(request["body"], request["headers"])
                print("ok")
            except Exception as error:
                print(str(error))
            """
        let request = try JSONSerialization.data(withJSONObject: [
            "secret": secret, "body": body, "headers": Dictionary(uniqueKeysWithValues: headers.map { ($0.name, $0.value) }),
        ])
        try #require(FileManager.default.isExecutableFile(atPath: python), "\(python): `make deploy-tools` installs it (make test does)")
        let result = try await Subprocess.run(python, ["-c", script], stdin: request)
        #expect(result.status == 0, "\(result.stderr)")
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `openssl pkeyutl -verify -rawin`: Ed25519 over the raw content, the key as SubjectPublicKeyInfo PEM.
    static func opensslVerifies(publicKey: [UInt8], content: [UInt8], signature: [UInt8]) async throws -> Bool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-ed25519-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // RFC 8410: SEQUENCE { SEQUENCE { OID 1.3.101.112 } BIT STRING { key } }.
        let spki: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00] + publicKey
        let pem = "-----BEGIN PUBLIC KEY-----\n\(Base64.encodeStandard(spki))\n-----END PUBLIC KEY-----\n"
        let files = ["key.pem": Data(pem.utf8), "content": Data(content), "signature": Data(signature)]
        for (name, data) in files { try data.write(to: directory.appendingPathComponent(name)) }
        let result = try await Subprocess.run("/usr/bin/openssl", ["pkeyutl", "-verify", "-pubin", "-inkey", directory.appendingPathComponent("key.pem").path,
                                                                   "-rawin", "-in", directory.appendingPathComponent("content").path,
                                                                   "-sigfile", directory.appendingPathComponent("signature").path])
        return result.status == 0 && result.output.contains("Signature Verified Successfully")
    }
}
