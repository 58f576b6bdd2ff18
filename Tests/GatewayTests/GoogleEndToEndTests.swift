import Config
import Events
import Foundation
import TestSupport
import Testing
import Toolkit
import Verifiers

/// Google pushes through the real gateway into the mock cluster, read back with kcat.
@Suite("Google end to end: HTTP -> OIDC -> RTDN -> Kafka")
struct GoogleEndToEndTests {
    static let audience = "https://tollgate.example.com/webhooks/google"
    static let email = "rtdn-push@my-project.iam.gserviceaccount.com"

    /// One RSA key per run, generated off the concurrency pool, and its JWKS file.
    struct Keys: Sendable {
        let key: PrivateKey
        let jwksPath: String
    }

    static let keys = Task { () -> Keys? in
        await offPool { () -> Keys? in
                guard let key = PrivateKey.generateRSA(), let components = key.publicKey?.rsaComponents else {
                    return nil
                }
                let jwks = #"{"keys":[{"e":"\#(Base64.encodeURL(components.exponent))","use":"sig","kty":"RSA","alg":"RS256","n":"\#(Base64.encodeURL(components.modulus))","kid":"e2e-key"}]}"#
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-e2e-jwks-\(UUID().uuidString).json").path
                _ = FileManager.default.createFile(atPath: path, contents: Data(jwks.utf8))
                return Keys(key: key, jwksPath: path)
        }
    }

    static func harness(jwks: String? = nil, fetcher: (any HTTPFetcher)? = nil) async throws -> (GatewayHarness, Keys) {
        let keys = try #require(await Self.keys.value)
        let harness = try await GatewayHarness(fetcher: fetcher) { sources in
            sources.google.audience = audience
            sources.google.serviceAccountEmail = email
            sources.google.packages = ["com.some.thing"]
            sources.google.jwks = jwks ?? keys.jwksPath
        }
        return (harness, keys)
    }

    static func token(_ keys: Keys) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        let header = #"{"alg":"RS256","kid":"e2e-key","typ":"JWT"}"#
        let claims = #"{"aud":"\#(audience)","email":"\#(email)","email_verified":true,"exp":\#(now + 3_600),"iat":\#(now),"iss":"https://accounts.google.com","sub":"1"}"#
        let input = Base64.encodeURL(Array(header.utf8)) + "." + Base64.encodeURL(Array(claims.utf8))
        return input + "." + Base64.encodeURL(keys.key.signRSASHA256(Array(input.utf8)) ?? [])
    }

    static func envelope(_ data: String, messageId: String = "2070443601311540", subscription: String = "projects/p/subscriptions/rtdn") -> String {
        #"{"message":{"data":"\#(Base64.encodeStandard(Array(data.utf8)))","messageId":"\#(messageId)","message_id":"\#(messageId)","publishTime":"2025-11-21T11:59:00.000Z"},"subscription":"\#(subscription)"}"#
    }

    static let renewed = #"{"version":"1.0","packageName":"com.some.thing","eventTimeMillis":"1763726340000","subscriptionNotification":{"version":"1.0","notificationType":2,"purchaseToken":"token-e2e"}}"#

    @Test("a wrapped push is answered 200 once the raw body and event are on their topics; the token is not kept")
    func wrapped() async throws {
        let (harness, keys) = try await Self.harness()
        let token = Self.token(keys)
        let body = Self.envelope(Self.renewed)
        let response = try await harness.client.request("POST", "/webhooks/google",
                                                        headers: ["Content-Type": "application/json", "Authorization": "Bearer \(token)"], body: body)
        #expect(response.status == 200, "\(response.body)")
        #expect(response.body.isEmpty)

        let raw = try await harness.records(harness.topics.raw(.google))
        #expect(raw.count == 1)
        #expect(raw.first?.key == "token-e2e")
        #expect(raw.first?.value == body)
        #expect(raw.first?.headers.contains("ce_id=google:projects/p/subscriptions/rtdn:2070443601311540") == true)
        #expect(raw.first?.headers.lowercased().contains("authorization") == false)
        #expect(raw.first?.headers.contains(String(token.suffix(40))) == false)

        let events = try await harness.records(harness.topics.events)
        let event = try #require(events.first)
        #expect(events.count == 1)
        #expect(event.key == "token-e2e")
        for header in ["ce_id=google:projects/p/subscriptions/rtdn:2070443601311540", "ce_source=/google/com.some.thing", "ce_type=dev.tollgate.subscription.renewed",
                       "ce_subject=token-e2e", "ce_time=2025-11-21T11:59:00.000Z"] {
            #expect(event.headers.contains(header), "missing \(header)")
        }
        #expect(try EventCoding.decode(Array(event.value.utf8)).sourceType == "SUBSCRIPTION_RENEWED(2)")
        #expect(try await harness.records(harness.topics.quarantine).isEmpty)
        await harness.stop()
    }

    @Test("an unwrapped push keeps its x-goog-pubsub-* metadata beside the raw body")
    func unwrapped() async throws {
        let (harness, keys) = try await Self.harness()
        let response = try await harness.client.request("POST", "/webhooks/google", headers: [
            "Authorization": "Bearer \(Self.token(keys))", "x-goog-pubsub-message-id": "136969346945",
            "x-goog-pubsub-publish-time": "2025-11-21T11:59:00.000Z",
            "x-goog-pubsub-subscription-name": "projects/p/subscriptions/rtdn"], body: Self.renewed)
        #expect(response.status == 200, "\(response.body)")
        let raw = try await harness.records(harness.topics.raw(.google))
        #expect(raw.first?.value == Self.renewed)
        #expect(raw.first?.headers.contains("http_x-goog-pubsub-message-id=136969346945") == true)
        let events = try await harness.records(harness.topics.events)
        #expect(events.first?.headers.contains("ce_id=google:projects/p/subscriptions/rtdn:136969346945") == true)
        await harness.stop()
    }

    @Test("an authentic push whose data is not an RTDN is answered 200 and goes to the quarantine topic only")
    func quarantined() async throws {
        let (harness, keys) = try await Self.harness()
        let body = Self.envelope("Hello Cloud Pub/Sub! Here is my message!", messageId: "q-1")
        let response = try await harness.client.request("POST", "/webhooks/google",
                                                        headers: ["Content-Type": "application/json", "Authorization": "Bearer \(Self.token(keys))"], body: body)
        #expect(response.status == 200)
        let quarantine = try await harness.records(harness.topics.quarantine)
        #expect(quarantine.count == 1)
        #expect(quarantine.first?.value == body)
        #expect(quarantine.first?.headers.contains("tollgate_quarantine_reason=data_not_json") == true)
        #expect(quarantine.first?.headers.contains("tollgate_source=google") == true)
        #expect(quarantine.first?.headers.lowercased().contains("authorization") == false)
        #expect(try await harness.records(harness.topics.raw(.google)).isEmpty)
        #expect(try await harness.records(harness.topics.events).isEmpty)
        #expect(try await harness.metric("tollgate_deliveries_quarantined_total", ["source": "google", "reason": "data_not_json"]) == 1)
        await harness.stop()
    }

    @Test("refusals: no token 401, forged token 401, unknown package 403, malformed envelope 400; counted, nothing published")
    func refusals() async throws {
        let (harness, keys) = try await Self.harness()
        let json = ["Content-Type": "application/json"]
        let missing = try await harness.client.request("POST", "/webhooks/google", headers: json, body: Self.envelope(Self.renewed))
        #expect(missing.status == 401)
        #expect(missing.body.contains(#""error":"missing_authorization""#))
        let forged = Self.token(keys).dropLast(4) + "AAAA"
        let bad = try await harness.client.request("POST", "/webhooks/google", headers: json.merging(["Authorization": "Bearer \(forged)"]) { $1 },
                                                   body: Self.envelope(Self.renewed))
        #expect(bad.status == 401)
        #expect(!bad.body.contains(String(forged.prefix(30))))
        let auth = json.merging(["Authorization": "Bearer \(Self.token(keys))"]) { $1 }
        let other = Self.renewed.replacingOccurrences(of: "com.some.thing", with: "com.other.app")
        let unknown = try await harness.client.request("POST", "/webhooks/google", headers: auth, body: Self.envelope(other))
        #expect(unknown.status == 403)
        #expect(unknown.body.contains(#""error":"unknown_package""#))
        let malformed = try await harness.client.request("POST", "/webhooks/google", headers: auth, body: #"{"message":{"data":"e30="}}"#)
        #expect(malformed.status == 400)

        #expect(try await harness.metric("tollgate_rejections_total", ["source": "google", "reason": "missing_authorization"]) == 1)
        #expect(try await harness.metric("tollgate_rejections_total", ["source": "google", "reason": "unknown_package"]) == 1)
        #expect(try await harness.records(harness.topics.raw(.google)).isEmpty)
        #expect(try await harness.records(harness.topics.events).isEmpty)
        await harness.stop()
    }

    /// A network where Google's key endpoint cannot be reached.
    struct UnreachableFetcher: HTTPFetcher {
        func fetch(_ request: HTTPFetchRequest) async throws(HTTPFetchError) -> HTTPFetchResponse {
            throw HTTPFetchError("connection refused")
        }
    }

    @Test("an unreachable key set URL: the gateway starts, /readyz says why, pushes are 503 with Retry-After")
    func unreachableKeySet() async throws {
        let (harness, keys) = try await Self.harness(jwks: "https://keys.invalid/oauth2/v3/certs", fetcher: UnreachableFetcher())
        let ready = try await harness.client.request("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.body.contains("google_key_set: Google signing keys not loaded from https://keys.invalid/oauth2/v3/certs: connection refused"), "\(ready.body)")
        let push = try await harness.client.request("POST", "/webhooks/google",
                                                    headers: ["Authorization": "Bearer \(Self.token(keys))"], body: Self.envelope(Self.renewed))
        #expect(push.status == 503)
        #expect(push.headers["retry-after"] != nil)
        #expect(push.body.contains(#""error":"key_set_unavailable""#))
        await harness.stop()

        let (healthy, _) = try await Self.harness()
        #expect(try await healthy.client.request("GET", "/readyz").status == 200)
        await healthy.stop()
    }
}
