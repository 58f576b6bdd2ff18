import Config
import Events
import Rejections
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

/// The hostile bodies of `JSONParserHostileTests` and `FormHostileTests` through the senders'
/// own paths: each ends in the right reason code (or a quarantine), never a crash.
@Suite("Hostile input through the senders")
struct SenderHostileInputTests {
    /// Bodies that are not one strict JSON document.
    static let notJSON: [[UInt8]] = [
        Array(String(repeating: "[", count: 100_000).utf8),
        Array((String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000)).utf8),
        Array(#"{"type":"test","password":"new-secret","type":"test"}"#.utf8),
        Array(#"{"password":"new-secret","\u00e9":1,"e\u0301":2}"#.utf8),
        Array(#"{"type":"test","password":"new-secret","x":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8),
        Array(#"{"type":"test","password":"new-secret","x":"\ud800"}"#.utf8),
        Array(#"{"type":"test","password":"new-secret","n":01}"#.utf8),
        Array(#"{"type":"test","password":"new-secret","n":NaN}"#.utf8),
    ]

    @Test("Iaptic, Apple and Citcon UPI refuse them as malformed_json", arguments: notJSON)
    func malformedJSON(body: [UInt8]) async {
        let at = IapticFixtures.receivedAt
        let json = HeaderFields([("Content-Type", "application/json")])
        let apple = AppleSource(apps: [], roots: [])
        #expect(await IapticFixtures.source.reason(WebhookRequest(path: "/webhooks/iaptic", headers: json, body: body, receivedAt: at)) == .malformedJSON)
        #expect(await apple.reason(WebhookRequest(path: "/webhooks/apple", headers: json, body: body, receivedAt: at)) == .malformedJSON)
        #expect(await CitconFixtures.source.reason(WebhookRequest(path: "/webhooks/citcon", headers: json, body: body, receivedAt: at)) == .malformedJSON)
    }

    @Test("Google refuses them as an envelope and quarantines them as message data")
    func google() async throws {
        let source = await GoogleFixtures.shared().source()
        for body in Self.notJSON {
            let envelope = WebhookRequest(path: "/webhooks/google", headers: HeaderFields(), body: body, receivedAt: GoogleFixtures.now)
            #expect(await Self.reverifyReason(source, envelope) == .malformedJSON)
            let push = Array(#"{"message":{"messageId":"m-1","data":"\#(Base64.encodeStandard(body))"},"subscription":"projects/p/subscriptions/s"}"#.utf8)
            let delivery = try await source.reverify(WebhookRequest(path: "/webhooks/google", headers: HeaderFields(), body: push,
                                                                   receivedAt: GoogleFixtures.now))
            #expect(delivery.quarantine?.reason == "data_not_json")
        }
    }

    @Test("Citcon refuses forms with invalid UTF-8, bad escapes or a repeated name as malformed_form", arguments: [
        "id=1&fields=id&sign=%FF", "id=%C0%AF&fields=id&sign=00", "id=%ED%A0%80&fields=id&sign=00", "id=1&fields=id&sign=%4",
        "id=1&id=1&fields=id&sign=00", "%C3%A9=1&e%CC%81=2&fields=id&sign=00",
    ])
    func malformedForm(body: String) async {
        #expect(await CitconFixtures.source.reason(CitconFixtures.request(body, contentType: "application/x-www-form-urlencoded")) == .malformedForm)
    }

    @Test("huge numbers are kept as written: no price from an amount that fits no Int64, signed text unchanged")
    func citconHugeNumbers() async throws {
        for amount in ["1e400", "1234567890123456789012345678901234567890", "-0"] {
            var members = CitconFixtures.charge
            members[3] = ("amount", amount)
            let delivery = try await CitconFixtures.source.handle(CitconFixtures.request(CitconFixtures.upi(members)))
            #expect(delivery.events.first?.price == nil || amount == "-0")
        }
    }

    @Test("an RTDN with numbers that fit no Int64 is quarantined, not an event with a wrapped time")
    func googleHugeNumbers() async throws {
        let source = await GoogleFixtures.shared().source()
        for eventTime in ["1e400", "12345678901234567890123456789012345678901", #""9223372036854775808""#, "1.5"] {
            let data = GoogleFixtures.rtdn(GoogleFixtures.subscription(4), eventTime: eventTime)
            let delivery = try await source.reverify(GoogleFixtures.request(GoogleFixtures.wrapped(data), token: nil))
            #expect(delivery.quarantine?.reason == "not_an_rtdn", "\(eventTime)")
        }
    }

    @Test("very long values pass through whole")
    func longValues() async throws {
        let user = String(repeating: "u", count: 1 << 20)
        let body = #"{"type":"test","password":"new-secret","applicationUsername":"\#(user)"}"#
        let delivery = try await IapticFixtures.source.handle(IapticFixtures.request(body))
        #expect(delivery.events.first?.user == user)
        let long = String(repeating: "%41", count: 1 << 18)
        #expect(await CitconFixtures.source.reason(CitconFixtures.request("x=\(long)&fields=id&id=1&sign=00",
                                                                          contentType: "application/x-www-form-urlencoded")) == .badSignature)
    }

    static func reverifyReason(_ source: GoogleSource, _ request: WebhookRequest) async -> (any ReasonCode)? {
        do { _ = try await source.reverify(request); return nil } catch { return error.reason }
    }
}
