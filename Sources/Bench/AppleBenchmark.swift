import Config
import Events
import Foundation
import Toolkit
import Verifiers

/// Apple notifications through the whole verifier (parse, chain cache, ES256, nested JWS, app
/// checks, normalization) against the bare ES256 verify of the same bytes.
struct AppleBenchmark {
    struct Result {
        let rawVerifiesPerSecond: Double
        let opensslSpeedVerifiesPerSecond: Double?
        let cases: [(name: String, perSecond: Double, checks: Int)]
    }

    let leafKey: PrivateKey
    let source: AppleSource
    let x5c: [String]

    init() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let rootKey = try unwrap(PrivateKey.generateP256())
        var rootBuilder = CertificateBuilder(subject: "Bench Root", notBefore: now - 86_400, notAfter: now + 86_400 * 365)
        rootBuilder.isCA = true
        let root = try unwrap(rootBuilder.issue(key: rootKey, issuer: nil, issuerKey: rootKey))
        let intermediateKey = try unwrap(PrivateKey.generateP256())
        var intermediateBuilder = CertificateBuilder(subject: "Bench WWDR", notBefore: now - 86_400, notAfter: now + 86_400 * 365)
        intermediateBuilder.isCA = true
        intermediateBuilder.markerOIDs = ["1.2.840.113635.100.6.2.1"]
        let intermediate = try unwrap(intermediateBuilder.issue(key: intermediateKey, issuer: root, issuerKey: rootKey))
        leafKey = try unwrap(PrivateKey.generateP256())
        var leafBuilder = CertificateBuilder(subject: "Bench Leaf", notBefore: now - 86_400, notAfter: now + 86_400 * 365)
        leafBuilder.markerOIDs = ["1.2.840.113635.100.6.11.1"]
        let leaf = try unwrap(leafBuilder.issue(key: leafKey, issuer: intermediate, issuerKey: intermediateKey))
        x5c = [leaf, intermediate, root].map { Base64.encodeStandard($0.der) }
        source = AppleSource(apps: [AppleSettings.App(bundleId: "com.example", appAppleId: 1234, environments: ["Sandbox", "Production"])],
                             roots: [root])
    }

    func sign(_ payload: String) throws -> String {
        let header = #"{"alg":"ES256","x5c":["\#(x5c[0])","\#(x5c[1])","\#(x5c[2])"]}"#
        let input = Base64.encodeURL(Array(header.utf8)) + "." + Base64.encodeURL(Array(payload.utf8))
        return input + "." + Base64.encodeURL(try unwrap(leafKey.signES256(Array(input.utf8))))
    }

    func request(_ jws: String) -> WebhookRequest {
        WebhookRequest(path: "/webhooks/apple", headers: HeaderFields([("Content-Type", "application/json")]),
                       body: Array(#"{"signedPayload":"\#(jws)"}"#.utf8), receivedAt: Timestamp(millisecondsSince1970: 0))
    }

    func run(seconds: Double, rounds: Int) async throws -> Result {
        let signedDate = Int64(Date().timeIntervalSince1970 * 1000)
        let transaction = try sign(#"{"originalTransactionId":"1000","transactionId":"1001","bundleId":"com.example","productId":"pro.monthly","purchaseDate":\#(signedDate),"expiresDate":\#(signedDate + 2_592_000_000),"quantity":1,"type":"Auto-Renewable Subscription","appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138","signedDate":\#(signedDate),"environment":"Sandbox","currency":"USD","price":4990,"storefront":"USA","transactionReason":"RENEWAL","inAppOwnershipType":"PURCHASED"}"#)
        let renewal = try sign(#"{"originalTransactionId":"1000","productId":"pro.monthly","autoRenewProductId":"pro.monthly","autoRenewStatus":1,"isInBillingRetryPeriod":false,"signedDate":\#(signedDate),"environment":"Sandbox","renewalDate":\#(signedDate + 2_592_000_000)}"#)
        let renewed = request(try sign(#"{"notificationType":"DID_RENEW","notificationUUID":"0b7a1b2c-3d4e-5f60-7182-93a4b5c6d7e8","version":"2.0","signedDate":\#(signedDate),"data":{"appAppleId":1234,"bundleId":"com.example","bundleVersion":"42","environment":"Sandbox","signedTransactionInfo":"\#(transaction)","signedRenewalInfo":"\#(renewal)","status":1}}"#))
        let test = request(try sign(#"{"notificationType":"TEST","notificationUUID":"9ad56bd2-0bc6-42e0-af24-fd996d87a1e6","version":"2.0","signedDate":\#(signedDate),"data":{"bundleId":"com.example","environment":"Sandbox"}}"#))

        // The raw case: the same ES256 check on the same kind of input, nothing else.
        let rawJWS = try sign(#"{"notificationType":"TEST"}"#)
        let parts = rawJWS.split(separator: ".")
        let signingInput = Array(rawJWS.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let signature = try unwrap(Base64.decodeURL(parts[2]))
        let publicKey = try unwrap(leafKey.publicKey)

        // Warm the chain cache.
        _ = try await source.handle(renewed)
        let source = self.source
        let rates = await interleaved(rounds: rounds, seconds: seconds, [
            ("raw", { publicKey.verifyES256(message: signingInput, signature: signature) }),
            ("renewal", { (try? await source.handle(renewed)) != nil }),
            ("test", { (try? await source.handle(test)) != nil }),
        ])
        return Result(
            rawVerifiesPerSecond: rates["raw"] ?? 0,
            opensslSpeedVerifiesPerSecond: opensslSpeed("ecdsap256", seconds: max(1, Int(seconds))),
            cases: [("DID_RENEW + nested transaction and renewal (3 ES256)", rates["renewal"] ?? 0, 3),
                    ("TEST, no nested JWS (1 ES256)", rates["test"] ?? 0, 1)])
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
}

func unwrap<T>(_ value: T?, _ what: String = "setup") throws -> T {
    guard let value else { throw BenchError(description: "\(what) failed") }
    return value
}
