import Foundation
import Toolkit

extension GoogleSender {
    struct LoadIdentity: Codable {
        var audience = "https://tollgate.example.com/webhooks/google"
        var email = "rtdn-push@bench-project.iam.gserviceaccount.com"
        var package = "com.example.bench"
        var keyId: String
    }

    /// A generated RSA key published in a key set file in Google's `oauth2/v3/certs` shape.
    public static func prepareLoad(in directory: LoadDirectory) throws -> String? {
        let identity = LoadIdentity(keyId: randomHex(20))
        let key = try PrivateKey.generateRSA(bits: 2048).orLoadError("RSA key")
        try directory.write(try key.pem.orLoadError("Google key PEM"), "signing-key.pem")
        let components = try (key.publicKey?.rsaComponents).orLoadError("RSA components")
        try directory.write(#"{"keys":[{"e":"\#(Base64.encodeURL(components.exponent))","use":"sig","kty":"RSA","alg":"RS256","n":"\#(Base64.encodeURL(components.modulus))","kid":"\#(identity.keyId)"}]}"#, "jwks.json")
        try directory.write(json: identity, "identity.json")
        return #"{ audience: "\#(identity.audience)", serviceAccountEmail: "\#(identity.email)", packages: [\#(identity.package)], jwks: "\#(directory.file("jwks.json"))" }"#
    }

    public static func loadTraffic(from directory: LoadDirectory) throws -> (any LoadTraffic)? {
        try GoogleLoadTraffic(directory: directory)
    }
}

/// Google Play RTDNs as a Cloud Pub/Sub push subscription delivers them: the wrapped envelope, and
/// an `Authorization: Bearer` OIDC token signed RS256 with the key published in the generated JWKS.
/// Pub/Sub reuses a token for many pushes, so a small pool of tokens (signing RSA is slow) serves
/// every delivery; the gateway verifies each one anyway (it keeps no token cache), one RS256 check.
struct GoogleLoadTraffic: LoadTraffic {
    let checksPerRequest = 1
    let algorithm: String? = "RS256"

    let tokens: [String]
    let package: String
    let now: Int64

    init(directory: LoadDirectory, poolSize: Int = 16) throws {
        let key = try PrivateKey(pem: try directory.read("signing-key.pem")).orLoadError("Google signing key")
        let setup = try directory.read(json: GoogleSender.LoadIdentity.self, "identity.json")
        let seconds = Int64(Date().timeIntervalSince1970)
        let header = Base64.encodeURL(Array(#"{"alg":"RS256","kid":"\#(setup.keyId)","typ":"JWT"}"#.utf8))
        tokens = try (0..<poolSize).map { slot in
            let issued = seconds - Int64(slot)
            let claims = #"{"aud":"\#(setup.audience)","azp":"104845678901234567890","email":"\#(setup.email)","email_verified":true,"exp":\#(issued + 3_600),"iat":\#(issued),"iss":"https://accounts.google.com","sub":"104845678901234567890"}"#
            let input = header + "." + Base64.encodeURL(Array(claims.utf8))
            return input + "." + Base64.encodeURL(try key.signRSASHA256(Array(input.utf8)).orLoadError("RS256 signature"))
        }
        package = setup.package
        now = seconds * 1000
    }

    func request(_ index: Int, run: String) -> LoadRequest {
        // Pub/Sub message ids are decimal; a purchase token is about 150 characters.
        let messageId = "1\(run.decimalDigits)\(index)"
        let purchaseToken = "\(run)\(index)." + String(repeating: "AO-J1Oz", count: 20)
        let rtdn = #"{"version":"1.0","packageName":"\#(package)","eventTimeMillis":"\#(now)","subscriptionNotification":{"version":"1.0","notificationType":2,"purchaseToken":"\#(purchaseToken)","subscriptionId":"pro.monthly"}}"#
        let published = "2026-01-01T00:00:00.000Z"
        let body = #"{"message":{"data":"\#(Base64.encodeStandard(Array(rtdn.utf8)))","messageId":"\#(messageId)","message_id":"\#(messageId)","publishTime":"\#(published)","publish_time":"\#(published)"},"subscription":"projects/bench-project/subscriptions/play-rtdn-push"}"#
        return LoadRequest(path: "/webhooks/google", headers: [
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer " + tokens[index % tokens.count]),
            ("User-Agent", "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)"),
        ], body: Array(body.utf8))
    }
}

extension String {
    /// The run tag (hex) as decimal digits, for ids that must be numeric.
    fileprivate var decimalDigits: String { String(UInt64(self, radix: 16) ?? 0) }
}
