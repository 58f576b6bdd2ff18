import Events
import TestSupport
import Testing
@testable import Verifiers

/// Times that RFC 3339 (four-digit years) cannot write are refused as malformed by every sender,
/// instead of reaching the event as invalid text such as `10000-01-01T00:00:00.000Z`.
@Suite("Times outside years 0000-9999")
struct TimesOutsideRFC3339Tests {
    /// 10000-01-01T00:00:00.000Z and one millisecond before 0000-01-01T00:00:00.000Z.
    static let afterYear9999: Int64 = 253_402_300_800_000
    static let beforeYear0: Int64 = -62_167_219_200_001

    @Test("Timestamp: the bounds, and RFC 3339 text that an offset takes outside them")
    func bounds() {
        #expect(Timestamp(representableMillisecondsSince1970: Self.afterYear9999 - 1)?.rfc3339 == "9999-12-31T23:59:59.999Z")
        #expect(Timestamp(representableMillisecondsSince1970: Self.beforeYear0 + 1)?.rfc3339 == "0000-01-01T00:00:00.000Z")
        #expect(Timestamp(representableMillisecondsSince1970: Self.afterYear9999) == nil)
        #expect(Timestamp(representableMillisecondsSince1970: Self.beforeYear0) == nil)
        #expect(Timestamp(representableMillisecondsSince1970: .max) == nil && Timestamp(representableMillisecondsSince1970: .min) == nil)
        for text in ["9999-12-31T23:59:59-00:01", "0000-01-01T00:00:00+00:01"] {
            #expect(Timestamp(rfc3339: text) == nil, "\(text)")
            guard case .failure(.outsideYears) = Timestamp.parse(rfc3339: text) else { Issue.record("\(text)"); continue }
        }
        guard case .failure(.malformed) = Timestamp.parse(rfc3339: "not a time") else { Issue.record("malformed"); return }
        #expect(Timestamp(rfc3339: "9999-12-31T23:59:59+01:00")?.rfc3339 == "9999-12-31T22:59:59.000Z")
    }

    @Test("Apple: a signed date past year 9999 is malformed_jws")
    func apple() async throws {
        let chain = try AppleTestChain()
        let transaction = AppleBodies.transaction(expiresDate: Self.afterYear9999)
        let request = AppleBodies.request(try chain.sign(AppleBodies.notification(transactionJWS: try chain.sign(transaction))))
        let rejection = await chain.source().rejection(request)
        #expect(rejection?.reason == .malformedJWS, "\(String(describing: rejection))")
        #expect(rejection?.message.contains("expiresDate") == true, "\(String(describing: rejection))")
        let negative = AppleBodies.transaction(purchaseDate: Self.beforeYear0)
        let second = AppleBodies.request(try chain.sign(AppleBodies.notification(transactionJWS: try chain.sign(negative))))
        #expect(await chain.source().reason(second) == .malformedJWS)
    }

    @Test("Google: an eventTimeMillis past year 9999 is not an RTDN (quarantined, answered 200)")
    func google() async throws {
        let f = await GoogleFixtures.shared()
        for eventTime in [#""\#(Self.afterYear9999)""#, "\(Self.beforeYear0)", #""9223372036854775807""#] {
            let request = GoogleFixtures.request(GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.subscription(4), eventTime: eventTime)),
                                                 token: f.token())
            let delivery = try await f.source().delivery(request)
            #expect(delivery.events.isEmpty)
            #expect(delivery.quarantine?.reason == "not_an_rtdn", "\(eventTime)")
            #expect(delivery.quarantine?.message.contains("eventTimeMillis is outside years 0000-9999") == true)
        }
    }

    @Test("Citcon: epoch milliseconds or RFC 3339 outside the years are invalid_field")
    func citcon() async throws {
        for (name, value) in [("time_completed", "99999999999999999"), ("time_created", #""9999-12-31T23:59:59.000-01:00""#)] {
            let members = CitconFixtures.charge.map { $0.0 == name ? (name, value) : $0 }
            let rejection = await CitconFixtures.source.rejection(CitconFixtures.request(CitconFixtures.upi(members)))
            #expect(rejection?.reason == .invalidField, "\(name): \(String(describing: rejection))")
            #expect(rejection?.message == "\(name) is outside years 0000-9999")
        }
    }

    @Test("Iaptic: a purchase date outside the years is invalid_field, number or text")
    func iaptic() async throws {
        for extra in [#","refundDate":\#(Self.afterYear9999)"#, #","gracePeriodEndDate":"0000-01-01T00:00:00+01:00""#] {
            let body = IapticFixtures.updated(purchases: [("apple:monthly", IapticFixtures.purchase(extra: extra))])
            let rejection = await IapticFixtures.source.rejection(IapticFixtures.request(body))
            #expect(rejection?.reason == .invalidField, "\(extra): \(String(describing: rejection))")
        }
    }

    @Test("Alipay+: a paymentTime that its offset takes past year 9999 is invalid_field")
    func alipayPlus() async throws {
        let body = AlipayPlusFixtures.antomBody.replacingOccurrences(of: "2026-11-21T11:59:58+08:00", with: "9999-12-31T23:59:59-08:00")
        let rejection = await AlipayPlusFixtures.source.rejection(AlipayPlusFixtures.request(body))
        #expect(rejection?.reason == .invalidField, "\(String(describing: rejection))")
        #expect(rejection?.message == "paymentTime is outside years 0000-9999")
    }
}
