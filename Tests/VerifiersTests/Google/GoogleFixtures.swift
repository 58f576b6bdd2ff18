import Events
import Foundation
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

/// RSA keys (generated once per run, off the concurrency pool), OIDC tokens signed like Pub/Sub's,
/// key sets shaped like Google's two documents, and pushes in both envelope forms.
struct GoogleFixtures: Sendable {
    let signing: PrivateKey
    let rotated: PrivateKey
    let stranger: PrivateKey

    static let audience = "https://tollgate.example.com/webhooks/google"
    static let email = "rtdn-push@my-project.iam.gserviceaccount.com"
    static let package = "com.some.thing"
    static let now = Timestamp(millisecondsSince1970: 1_763_726_400_000)
    static var nowSeconds: Int64 { now.millisecondsSince1970 / 1000 }

    static func shared() async -> GoogleFixtures { await cache.value }

    private static let cache = Task {
        await offPool { GoogleFixtures() }
    }

    private init() {
        func generate() -> PrivateKey {
            guard let key = PrivateKey.generateRSA() else { fatalError("RSA key generation failed") }
            return key
        }
        signing = generate()
        rotated = generate()
        stranger = generate()
    }

    // MARK: tokens

    static func claims(iss: String = "https://accounts.google.com", aud: String = audience, email: String = email,
                       emailVerified: String = "true", iat: Int64? = nowSeconds - 30, exp: Int64? = nowSeconds + 3_570,
                       extra: [String] = []) -> String {
        var fields = [#""aud":"\#(aud)""#, #""azp":"113774264463038321964""#, #""email":"\#(email)""#,
                      #""email_verified":\#(emailVerified)"#, #""iss":"\#(iss)""#, #""sub":"113774264463038321964""#]
        if let iat { fields.append(#""iat":\#(iat)"#) }
        if let exp { fields.append(#""exp":\#(exp)"#) }
        return "{" + (fields + extra).joined(separator: ",") + "}"
    }

    static func header(alg: String = "RS256", kid: String? = "key-1") -> String {
        kid.map { #"{"alg":"\#(alg)","kid":"\#($0)","typ":"JWT"}"# } ?? #"{"alg":"\#(alg)","typ":"JWT"}"#
    }

    static func segment(_ text: String) -> String { Base64.encodeURL(Array(text.utf8)) }

    /// A token signed RS256 with `key` (default: the signing key, published as `key-1`).
    func token(header: String = GoogleFixtures.header(), claims: String = GoogleFixtures.claims(), key: PrivateKey? = nil) -> String {
        let input = Self.segment(header) + "." + Self.segment(claims)
        let signature = (key ?? signing).signRSASHA256(Array(input.utf8)) ?? []
        return input + "." + Base64.encodeURL(signature)
    }

    // MARK: key sets

    /// `https://www.googleapis.com/oauth2/v3/certs` shape.
    static func jwks(_ keys: [(kid: String, key: PrivateKey)]) -> String {
        let entries = keys.map { entry -> String in
            let components = entry.key.publicKey?.rsaComponents
            let n = Base64.encodeURL(components?.modulus ?? []), e = Base64.encodeURL(components?.exponent ?? [])
            return #"{"e":"\#(e)","use":"sig","kty":"RSA","alg":"RS256","n":"\#(n)","kid":"\#(entry.kid)"}"#
        }
        return #"{"keys":[\#(entries.joined(separator: ","))]}"#
    }

    /// `https://www.googleapis.com/oauth2/v1/certs` shape: `kid` -> self-signed PEM certificate.
    static func certificates(_ keys: [(kid: String, key: PrivateKey)]) -> String {
        let entries = keys.map { entry -> String in
            var builder = CertificateBuilder(subject: "securetoken.system.gserviceaccount.com", notBefore: nowSeconds - 86_400,
                                             notAfter: nowSeconds + 86_400)
            builder.keyIdentifiers = false
            let pem = builder.issue(key: entry.key, issuer: nil, issuerKey: entry.key)?.pem ?? ""
            return #""\#(entry.kid)":"\#(pem.replacingOccurrences(of: "\n", with: "\\n"))""#
        }
        return "{" + entries.joined(separator: ",") + "}"
    }

    var keySet: GoogleKeySet {
        GoogleKeySet(keys: ["key-1": signing.publicKey!, "key-2": rotated.publicKey!], origin: "test keys")
    }

    func source(keySet: GoogleKeySet? = nil, packages: [String] = [GoogleFixtures.package, "com.some.app"]) -> GoogleSource {
        GoogleSource(audience: Self.audience, serviceAccountEmail: Self.email, keySet: keySet ?? self.keySet, packages: packages)
    }

    // MARK: pushes

    static func rtdn(_ kind: String, packageName: String = package, eventTime: String = #""1763726340000""#) -> String {
        #"{"version":"1.0","packageName":"\#(packageName)","eventTimeMillis":\#(eventTime),\#(kind)}"#
    }

    static func subscription(_ type: Int, token: String = "purchase-token-1", subscriptionId: String? = "monthly") -> String {
        let id = subscriptionId.map { #","subscriptionId":"\#($0)""# } ?? ""
        return #""subscriptionNotification":{"version":"1.0","notificationType":\#(type),"purchaseToken":"\#(token)"\#(id)}"#
    }

    static func oneTime(_ type: Int, token: String = "purchase-token-2") -> String {
        #""oneTimeProductNotification":{"version":"1.0","notificationType":\#(type),"purchaseToken":"\#(token)","sku":"coins.100"}"#
    }

    static let voided = #""voidedPurchaseNotification":{"purchaseToken":"purchase-token-3","orderId":"GPA.1234-5678-9012-34567","productType":1,"refundType":1}"#
    static let test = #""testNotification":{"version":"1.0"}"#

    static func wrapped(_ data: String?, messageId: String = "2070443601311540") -> String {
        let dataField = data.map { #""data":"\#(Base64.encodeStandard(Array($0.utf8)))","# } ?? ""
        return #"{"message":{"attributes":{"key":"value"},\#(dataField)"messageId":"\#(messageId)","message_id":"\#(messageId)","publishTime":"2025-11-21T11:59:00.000Z","publish_time":"2025-11-21T11:59:00.000Z"},"subscription":"projects/my-project/subscriptions/rtdn-push"}"#
    }

    static func request(_ body: String, token: String?, headers: [(String, String)] = [("Content-Type", "application/json")],
                        now: Timestamp = now) -> WebhookRequest {
        var fields = HeaderFields(headers)
        if let token { fields.append(name: "Authorization", value: "Bearer \(token)") }
        return WebhookRequest(path: "/webhooks/google", headers: fields, body: Array(body.utf8), receivedAt: now)
    }

    static func unwrapped(_ rtdn: String, token: String?, messageId: String = "136969346945") -> WebhookRequest {
        request(rtdn, token: token, headers: [("x-goog-pubsub-message-id", messageId),
                                              ("x-goog-pubsub-publish-time", "2025-11-21T11:59:00.000Z"),
                                              ("x-goog-pubsub-subscription-name", "projects/my-project/subscriptions/rtdn-push")])
    }
}

extension GoogleSource {
    func delivery(_ request: WebhookRequest) async throws -> AcceptedDelivery {
        do { return try await handle(request) } catch { throw error }
    }
}
