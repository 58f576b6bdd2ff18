import Config
import Events
import Foundation
import Testing
import Toolkit
import Verifiers

@Suite("Citcon end to end: HTTP -> verify -> normalize -> Kafka")
struct CitconEndToEndTests {
    static let secret = "e2e-upi-secret"
    static let token = "e2e-chop-token"

    static func harness() async throws -> GatewayHarness {
        try await GatewayHarness { sources in
            sources.citcon.accounts = [CitconSettings.Account(name: "shop", secrets: [secret], tokens: [token]),
                                       CitconSettings.Account(name: "other", secrets: ["other-secret"])]
        }
    }

    static func upi(status: String = "success", secret: String = secret) -> String {
        let fields = "id,transaction_type,reference,amount,currency,status,time_completed"
        let signed = "amount=2500&currency=USD&fields=\(fields)&id=ipn-1&reference=order-1&status=\(status)&time_completed=2026-11-20T10:00:00.000Z&transaction_type=charge&secret=\(secret)"
        let sign = Digest.hex(Digest.sha256(signed))
        return #"{"id":"ipn-1","transaction_type":"charge","reference":"order-1","amount":2500,"currency":"USD","status":"\#(status)","time_completed":"2026-11-20T10:00:00.000Z","fields":"\#(fields)","sign":"\#(sign)"}"#
    }

    static func legacy() -> String {
        let fields = "id,reference,amount,currency,notify_status,note"
        let signed = "amount=300&currency=JPY&fields=\(fields)&id=chop-9&note=a&b=c&notify_status=success&reference=order-9&token=\(token)"
        let sign = Digest.hex(Digest.md5(Array(signed.utf8)))
        return "id=chop-9&reference=order-9&amount=300&currency=JPY&notify_status=success&note=a%26b%3Dc&fields=\(fields.replacingOccurrences(of: ",", with: "%2C"))&sign=\(sign)"
    }

    @Test("a UPI IPN on the account's route is answered 200 ok after the raw body and event are on their topics")
    func upiOnAccountRoute() async throws {
        let harness = try await Self.harness()
        let body = Self.upi()
        let response = try await harness.client.request("POST", "/webhooks/citcon/shop", headers: ["Content-Type": "application/json"], body: body)
        #expect(response.status == 200)
        #expect(response.body == "ok")
        #expect(response.headers["content-type"] == "text/plain")

        let raw = try await harness.records(harness.topics.raw(.citcon))
        #expect(raw.count == 1)
        #expect(raw.first?.key == "order-1")
        #expect(raw.first?.value == body, "the raw topic holds the exact bytes received")
        #expect(raw.first?.headers.contains("ce_id=citcon:shop:ipn-1:charge:success") == true)
        #expect(raw.first?.headers.contains("tollgate_path=/webhooks/citcon/shop") == true)

        let events = try await harness.records(harness.topics.events)
        let event = try #require(events.first)
        #expect(events.count == 1)
        #expect(event.key == "order-1")
        for header in ["ce_id=citcon:shop:ipn-1:charge:success", "ce_source=/citcon/shop", "ce_type=dev.tollgate.purchase.completed",
                       "ce_subject=order-1", "ce_time=2026-11-20T10:00:00.000Z"] {
            #expect(event.headers.contains(header), "missing \(header)")
        }
        let decoded = try EventCoding.decode(Array(event.value.utf8))
        #expect(decoded.price == NormalizedEvent.Price(amountMicros: 25_000_000, currency: "USD"))
        #expect(try await harness.metric("tollgate_deliveries_accepted_total", ["source": "citcon"]) == 1)
        #expect(try await harness.metric("tollgate_http_requests_total", ["route": "/webhooks/citcon/{account}", "status": "200"]) == 1)
        await harness.stop()
    }

    @Test("a legacy form IPN on the shared route is verified with the token and answered ok")
    func legacyOnSharedRoute() async throws {
        let harness = try await Self.harness()
        let body = Self.legacy()
        let response = try await harness.client.request("POST", "/webhooks/citcon",
                                                        headers: ["Content-Type": "application/x-www-form-urlencoded"], body: body)
        #expect(response.status == 200, "\(response.body)")
        #expect(response.body == "ok")
        let raw = try await harness.records(harness.topics.raw(.citcon))
        #expect(raw.first?.value == body)
        let events = try await harness.records(harness.topics.events)
        #expect(events.count == 1)
        #expect(events.first?.headers.contains("ce_id=citcon:shop:chop-9:charge:success") == true)
        #expect(events.first?.headers.contains("ce_source=/citcon/shop") == true)
        await harness.stop()
    }

    @Test("refusals: wrong secret 401, another account's route 401, unknown account 404, GET 405; counted, nothing published")
    func refusals() async throws {
        let harness = try await Self.harness()
        let json = ["Content-Type": "application/json"]
        let wrong = try await harness.client.request("POST", "/webhooks/citcon", headers: json, body: Self.upi(secret: "guess"))
        #expect(wrong.status == 401)
        #expect(wrong.body.contains(#""error":"bad_signature""#))
        #expect(!wrong.body.contains("guess"))
        let otherRoute = try await harness.client.request("POST", "/webhooks/citcon/other", headers: json, body: Self.upi())
        #expect(otherRoute.status == 401)
        let unknown = try await harness.client.request("POST", "/webhooks/citcon/nobody", headers: json, body: Self.upi())
        #expect(unknown.status == 404)
        #expect(unknown.body.contains(#""error":"unknown_account""#))
        let get = try await harness.client.request("GET", "/webhooks/citcon/shop")
        #expect(get.status == 405)
        #expect(get.headers["allow"] == "POST")
        let xml = try await harness.client.request("POST", "/webhooks/citcon", headers: ["Content-Type": "text/xml"], body: Self.upi())
        #expect(xml.status == 415)

        for reason in ["bad_signature", "unknown_account", "method_not_allowed", "unsupported_media_type"] {
            #expect(try await harness.metric("tollgate_rejections_total", ["source": "citcon", "reason": reason]) == (reason == "bad_signature" ? 2 : 1), "\(reason)")
        }
        #expect(try await harness.records(harness.topics.raw(.citcon)).isEmpty)
        #expect(try await harness.records(harness.topics.events).isEmpty)
        await harness.stop()
    }
}
