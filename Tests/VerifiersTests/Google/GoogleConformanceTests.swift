import Events
import Foundation
import TestSupport
import Testing
import Toolkit
@testable import Verifiers

/// Google's documented Pub/Sub envelopes and RTDN payloads (and real captures), read from
/// ../shared/conformance/google and never copied into the repository. They carry no usable token,
/// so each push gets one signed here, as Google's own sample tests do.
@Suite("Google: conformance with Google's documented envelopes", .enabled(if: SharedFiles.present, "../shared/conformance is absent"))
struct GoogleConformanceTests {
    static let folder = SharedFiles.root.appendingPathComponent("conformance/google")
    static let packages = ["com.some.thing", "com.some.app", "com.example.redacted"]

    static func manifest() throws -> [[String: Any]] {
        let data = try Data(contentsOf: folder.appendingPathComponent("manifest.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
    }

    static func json(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("every wrapped push in the manifest: RTDNs normalize, everything else is acknowledged and quarantined")
    func wrappedPushes() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source(packages: Self.packages)
        let entries = try Self.manifest().filter { $0["kind"] as? String == "wrapped-push" }
        #expect(entries.count == 9)
        for entry in entries {
            let file = try #require(entry["file"] as? String)
            let body = try Data(contentsOf: Self.folder.appendingPathComponent(file))
            let envelope = try Self.json(file)
            let messageId = try #require((envelope["message"] as? [String: Any])?["messageId"] as? String)
            let request = WebhookRequest(path: "/webhooks/google",
                                         headers: HeaderFields([("Content-Type", "application/json"), ("Authorization", "Bearer \(f.token())")]),
                                         body: Array(body), receivedAt: GoogleFixtures.now)
            let delivery = try await source.delivery(request)
            #expect(delivery.response.status == 200, "\(file)")
            if entry["data_is_rtdn"] as? Bool == true {
                let event = try #require(delivery.events.first, "\(file)")
                #expect(delivery.quarantine == nil)
                #expect(event.id == "google:\(envelope["subscription"] as? String ?? ""):\(messageId)")
                let decoded = try #require(entry["decoded_data_utf8"] as? String)
                let rtdn = try #require(try JSONSerialization.jsonObject(with: Data(decoded.utf8)) as? [String: Any])
                #expect(event.source == "/google/\(rtdn["packageName"] as? String ?? "")")
                let millis = try #require(Int64(rtdn["eventTimeMillis"] as? String ?? ""))
                #expect(event.occurredAt == Timestamp(millisecondsSince1970: millis).rfc3339)
                switch entry["notification"] as? String {
                case "subscriptionNotification":
                    let code = try #require(entry["notificationType"] as? Int)
                    #expect(event.sourceType == "\(entry["notificationTypeName"] as? String ?? "")(\(code))")
                    #expect(event.type == (code == 4 ? .subscriptionStarted : .subscriptionAutoRenewDisabled))
                    #expect(event.subject == ((rtdn["subscriptionNotification"] as? [String: Any])?["purchaseToken"] as? String))
                case "oneTimeProductNotification":
                    #expect(event.type == .purchaseCompleted)
                    #expect(event.product == entry["sku"] as? String)
                    #expect(event.subject == "PURCHASE_TOKEN")
                case "voidedPurchaseNotification":
                    #expect(event.type == .purchaseRefunded)
                    #expect(event.transaction?.id == entry["orderId"] as? String)
                    #expect(event.reason == "full_refund")
                case "testNotification":
                    #expect(event.type == .storeTest)
                default:
                    Issue.record("unexpected notification kind in \(file)")
                }
            } else {
                #expect(delivery.events.isEmpty, "\(file)")
                #expect(delivery.quarantine?.reason == "data_not_json", "\(file)")
                #expect(delivery.rawKey == messageId)
            }
            // The same bytes without a token are refused: the vectors prove nothing by themselves.
            let unsigned = WebhookRequest(path: "/webhooks/google", headers: HeaderFields(), body: Array(body), receivedAt: GoogleFixtures.now)
            #expect(await source.reason(unsigned) == .missingAuthorization)
        }
    }

    @Test("the unwrapped (noWrapper + writeMetadata) request: raw RTDN body, metadata in x-goog-pubsub-* headers")
    func unwrappedPush() async throws {
        let f = await GoogleFixtures.shared()
        let described = try Self.json("pubsub-push-unwrapped-rtdn.request.json")
        let headers = try #require(described["headers"] as? [String: String])
        var fields = HeaderFields()
        for (name, value) in headers where name != "Authorization" { fields.append(name: name, value: value) }
        fields.append(name: "Authorization", value: "Bearer \(f.token())")
        let body = try #require(described["body_utf8"] as? String)
        let delivery = try await f.source(packages: Self.packages).delivery(
            WebhookRequest(path: "/webhooks/google", headers: fields, body: Array(body.utf8), receivedAt: GoogleFixtures.now))
        let event = try #require(delivery.events.first)
        #expect(event.id == "google:\(headers["x-goog-pubsub-subscription-name"] ?? ""):\(headers["x-goog-pubsub-message-id"] ?? "")")
        #expect(event.type == .subscriptionStarted)
        #expect(event.subject == "PURCHASE_TOKEN")
    }

    @Test("the documentation's example token parses as RS256 with its kid, and is refused: unknown kid, and expired")
    func documentedToken() async throws {
        let f = await GoogleFixtures.shared()
        let example = try Self.json("pubsub-push-auth-header.docs-example.json")
        let authorization = try #require(example["Authorization"] as? String)
        let kid = try #require((example["_decoded_header"] as? [String: Any])?["kid"] as? String)
        let claims = try #require(example["_decoded_claims"] as? [String: Any])
        let exp = try #require(claims["exp"] as? Int64)
        let body = try Data(contentsOf: Self.folder.appendingPathComponent("rtdn-subscription-purchased.envelope.json"))

        func request(at seconds: Int64) -> WebhookRequest {
            WebhookRequest(path: "/webhooks/google", headers: HeaderFields([("Authorization", authorization)]), body: Array(body),
                           receivedAt: Timestamp(millisecondsSince1970: seconds * 1000))
        }
        // Its kid is not among today's keys.
        #expect(await f.source(packages: Self.packages).reason(request(at: GoogleFixtures.nowSeconds)) == .unknownKeyId)
        // With some key under that kid, the signature is what fails, even at the time it was issued.
        let impostor = GoogleKeySet(keys: [kid: f.signing.publicKey!], origin: "impostor")
        let checked = GoogleSource(audience: claims["aud"] as? String ?? "", serviceAccountEmail: claims["email"] as? String ?? "",
                                   keySet: impostor, packages: Self.packages)
        #expect(await checked.reason(request(at: exp - 60)) == .badSignature)
        // Re-signed with our key, the same claims are accepted at issue time and expired now.
        let resigned = f.token(header: GoogleFixtures.header(kid: kid),
                               claims: String(decoding: try JSONSerialization.data(withJSONObject: claims), as: UTF8.self))
        func resignedRequest(at seconds: Int64) -> WebhookRequest {
            WebhookRequest(path: "/webhooks/google", headers: HeaderFields([("Authorization", "Bearer \(resigned)")]), body: Array(body),
                           receivedAt: Timestamp(millisecondsSince1970: seconds * 1000))
        }
        #expect(await checked.reason(resignedRequest(at: exp - 60)) == nil)
        #expect(await checked.reason(resignedRequest(at: GoogleFixtures.nowSeconds)) == .tokenExpired)
    }
}
