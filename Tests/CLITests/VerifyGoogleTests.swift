import Foundation
import Testing

/// `tollgate verify --source google` on a push signed with the openssl command line, with the key
/// set in a file, as an operator checks a captured push. Child processes run off the pool (TestSupport).
@Suite("tollgate verify: Google")
struct VerifyGoogleTests {
    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func hexBytes(_ hex: String) -> Data {
        var bytes = Data()
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex),
              let byte = UInt8(hex[index..<next], radix: 16) {
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    @Test("a push signed by a key of the configured JWKS file prints its event; --at decides expiry; a URL key set exits 2")
    func verify() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-cli-google-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let keyPath = folder.appendingPathComponent("push.pem").path
        _ = try await VerifyPaymentsTests.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyPath])
        let modulusLine = String(decoding: try await VerifyPaymentsTests.openssl(["rsa", "-in", keyPath, "-noout", "-modulus"]), as: UTF8.self)
        let modulus = Self.hexBytes(modulusLine.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: ""))
        #expect(modulus.count == 256)
        let jwks = #"{"keys":[{"e":"AQAB","use":"sig","kty":"RSA","alg":"RS256","n":"\#(Self.base64URL(modulus))","kid":"cli-key"}]}"#
        let jwksPath = try CLI.temporaryFile("certs.json", jwks)
        let config = try CLI.temporaryFile("tollgate.yaml", """
            sources:
              google:
                audience: https://tollgate.example.com/webhooks/google
                serviceAccountEmail: rtdn-push@my-project.iam.gserviceaccount.com
                packages: [com.some.thing]
                jwks: \(jwksPath)
            """)

        let iat: Int64 = 1_763_726_370
        let header = #"{"alg":"RS256","kid":"cli-key","typ":"JWT"}"#
        let claims = #"{"aud":"https://tollgate.example.com/webhooks/google","email":"rtdn-push@my-project.iam.gserviceaccount.com","email_verified":true,"exp":\#(iat + 3_600),"iat":\#(iat),"iss":"https://accounts.google.com","sub":"1"}"#
        let input = Self.base64URL(Data(header.utf8)) + "." + Self.base64URL(Data(claims.utf8))
        let signature = try await VerifyPaymentsTests.openssl(["dgst", "-sha256", "-sign", keyPath], input: Data(input.utf8))
        let token = input + "." + Self.base64URL(signature)

        let rtdn = #"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"1763726340000","subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"cli-token"}}"#
        let body = try CLI.temporaryFile("push.json", #"{"message":{"data":"\#(Data(rtdn.utf8).base64EncodedString())","messageId":"4242"},"subscription":"projects/p/subscriptions/s"}"#)
        let run = { @Sendable (arguments: [String]) async throws -> CLI.Result in try await CLI.run(arguments) }

        let accepted = try await run(["verify", "--source", "google", "--config", config, "--header", "Authorization: Bearer \(token)",
                                      "--header", "Content-Type: application/json", "--at", "2025-11-21T12:00:00Z", body])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let events = try JSONSerialization.jsonObject(with: Data(accepted.stdout.utf8)) as? [[String: Any]]
        #expect(events?.first?["id"] as? String == "google:projects/p/subscriptions/s:4242")
        #expect(events?.first?["type"] as? String == "subscription.started")
        #expect(events?.first?["subject"] as? String == "cli-token")

        let expired = try await run(["verify", "--source", "google", "--config", config, "--header", "Authorization: Bearer \(token)",
                                     "--at", "2025-11-21T14:00:00Z", body])
        #expect(expired.status == 1)
        #expect(expired.stderr.contains(#""error":"token_expired""#))
        #expect(!expired.stderr.contains(token))

        let missing = try await run(["verify", "--source", "google", "--config", config, "--at", "2025-11-21T12:00:00Z", body])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains(#""error":"missing_authorization""#))

        let quarantined = try CLI.temporaryFile("other.json", #"{"message":{"data":"aGVsbG8=","messageId":"9"},"subscription":"projects/p/subscriptions/rtdn"}"#)
        let acknowledged = try await run(["verify", "--source", "google", "--config", config, "--header", "Authorization: Bearer \(token)",
                                          "--at", "2025-11-21T12:00:00Z", quarantined])
        #expect(acknowledged.status == 0)
        #expect(acknowledged.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]" || acknowledged.stdout.contains("[\n\n]"))
        #expect(acknowledged.stderr.contains(#""quarantined":"data_not_json""#))

        let urlConfig = try CLI.temporaryFile("tollgate.yaml", """
            sources:
              google: { audience: a, serviceAccountEmail: b@c, packages: [com.some.thing] }
            """)
        let offline = try await run(["verify", "--source", "google", "--config", urlConfig, body])
        #expect(offline.status == 2)
        #expect(offline.stderr.contains("sources.google.jwks is a URL"))
        // Other senders verify with the same configuration.
        let iaptic = try await run(["verify", "--source", "iaptic", "--config", urlConfig, body])
        #expect(iaptic.status != 2)
    }
}
