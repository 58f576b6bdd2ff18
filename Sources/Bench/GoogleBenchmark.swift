import Events
import Foundation
import Toolkit
import Verifiers

/// Google pushes through the whole verifier (token header, key lookup, RS256, claims, envelope,
/// base64, RTDN decoding, normalization) against the bare RS256 verify of the same token.
struct GoogleBenchmark {
    struct Result {
        let rawVerifiesPerSecond: Double
        let opensslSpeedVerifiesPerSecond: Double?
        let pushesPerSecond: Double
    }

    func run(seconds: Double, rounds: Int) async throws -> Result {
        let key = try unwrap(PrivateKey.generateRSA(bits: 2048))
        let publicKey = try unwrap(key.publicKey)
        let audience = "https://tollgate.example.com/webhooks/google"
        let email = "rtdn-push@my-project.iam.gserviceaccount.com"
        let source = GoogleSource(audience: audience, serviceAccountEmail: email,
                                  keySet: GoogleKeySet(keys: ["bench": publicKey], origin: "bench"), packages: ["com.some.thing"])
        let now = Int64(Date().timeIntervalSince1970)
        let header = #"{"alg":"RS256","kid":"bench","typ":"JWT"}"#
        let claims = #"{"aud":"\#(audience)","azp":"1","email":"\#(email)","email_verified":true,"exp":\#(now + 3_600),"iat":\#(now),"iss":"https://accounts.google.com","sub":"1"}"#
        let signingInput = Array((Base64.encodeURL(Array(header.utf8)) + "." + Base64.encodeURL(Array(claims.utf8))).utf8)
        let signature = try unwrap(key.signRSASHA256(signingInput))
        let token = String(decoding: signingInput, as: UTF8.self) + "." + Base64.encodeURL(signature)
        let rtdn = #"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"\#(now * 1000)","subscriptionNotification":{"version":"1.0","notificationType":2,"purchaseToken":"bench-token"}}"#
        let body = #"{"message":{"data":"\#(Base64.encodeStandard(Array(rtdn.utf8)))","messageId":"2070443601311540","message_id":"2070443601311540","publishTime":"2025-11-21T11:59:00.000Z"},"subscription":"projects/p/subscriptions/rtdn"}"#
        let request = WebhookRequest(path: "/webhooks/google",
                                     headers: HeaderFields([("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")]),
                                     body: Array(body.utf8), receivedAt: Timestamp(millisecondsSince1970: now * 1000))
        _ = try await source.handle(request)
        let rates = await interleaved(rounds: rounds, seconds: seconds, [
            ("raw", { publicKey.verifyRSASHA256(message: signingInput, signature: signature) }),
            ("push", { (try? await source.handle(request)) != nil }),
        ])
        return Result(rawVerifiesPerSecond: rates["raw"] ?? 0,
                      opensslSpeedVerifiesPerSecond: opensslSpeed("rsa2048", seconds: max(1, Int(seconds))),
                      pushesPerSecond: rates["push"] ?? 0)
    }
}
