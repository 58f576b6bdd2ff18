import Foundation
import Senders
import Toolkit

/// Google Play RTDNs as a Cloud Pub/Sub push subscription delivers them: the wrapped envelope, and
/// an `Authorization: Bearer` OIDC token signed RS256 with the key published in the generated JWKS.
/// Pub/Sub reuses a token for many pushes, so a small pool of tokens (signing RSA is slow) serves
/// every delivery; the gateway verifies each one anyway (it keeps no token cache), one RS256 check.
struct GoogleTraffic: SenderTraffic {
    let source = "google"
    let checksPerRequest = 1
    let algorithm: String? = "RS256"

    let tokens: [String]
    let package: String
    let now: Int64

    init(directory: String, setup: BenchSetup, poolSize: Int = 16) throws {
        let key = try required(PrivateKey(pem: try readFile(directory, BenchSetup.File.googleKey)), "Google signing key")
        let seconds = Int64(Date().timeIntervalSince1970)
        let header = Base64.encodeURL(Array(#"{"alg":"RS256","kid":"\#(setup.googleKeyId)","typ":"JWT"}"#.utf8))
        tokens = try (0..<poolSize).map { slot in
            let issued = seconds - Int64(slot)
            let claims = #"{"aud":"\#(setup.googleAudience)","azp":"104845678901234567890","email":"\#(setup.googleEmail)","email_verified":true,"exp":\#(issued + 3_600),"iat":\#(issued),"iss":"https://accounts.google.com","sub":"104845678901234567890"}"#
            let input = header + "." + Base64.encodeURL(Array(claims.utf8))
            return input + "." + Base64.encodeURL(try required(key.signRSASHA256(Array(input.utf8)), "RS256 signature"))
        }
        package = setup.googlePackage
        now = seconds * 1000
    }

    func request(_ index: Int, run: String) -> RequestParts {
        // Pub/Sub message ids are decimal; a purchase token is about 150 characters.
        let messageId = "1\(run.decimalDigits)\(index)"
        let purchaseToken = "\(run)\(index)." + String(repeating: "AO-J1Oz", count: 20)
        let rtdn = #"{"version":"1.0","packageName":"\#(package)","eventTimeMillis":"\#(now)","subscriptionNotification":{"version":"1.0","notificationType":2,"purchaseToken":"\#(purchaseToken)","subscriptionId":"pro.monthly"}}"#
        let published = "2026-01-01T00:00:00.000Z"
        let body = #"{"message":{"data":"\#(Base64.encodeStandard(Array(rtdn.utf8)))","messageId":"\#(messageId)","message_id":"\#(messageId)","publishTime":"\#(published)","publish_time":"\#(published)"},"subscription":"projects/bench-project/subscriptions/play-rtdn-push"}"#
        return RequestParts(path: "/webhooks/google", headers: [
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer " + tokens[index % tokens.count]),
            ("User-Agent", "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)"),
        ], body: Array(body.utf8))
    }
}

extension String {
    /// The run tag (hex) as decimal digits, for ids that must be numeric.
    var decimalDigits: String { String(UInt64(self, radix: 16) ?? 0) }
}
