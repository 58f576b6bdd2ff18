import Events
import Rejections
import TestSupport
import Testing
@testable import Verifiers

/// Found by review while fuzzing: integers at the ends of Int64 trapped in arithmetic on them.
@Suite("Times and amounts at the ends of Int64")
struct ExtremeTimesAndAmountsTests {
    @Test("Apple: signedDate is read before any signature check; Int64.min or max is refused, not trapped on")
    func appleSignedDate() async throws {
        let chain = try AppleTestChain()
        // Outside years 0000-9999: no date the event could write, refused before the chain is looked at.
        for signedDate in [Int64.min, Int64.min + 1, Int64.max] {
            let request = AppleBodies.request(try chain.sign(AppleBodies.notification(signedDate: signedDate)))
            #expect(await chain.source().reason(request) == .malformedJWS, "\(signedDate)")
        }
        // Far, but within what certificates can express: expired.
        let farPast = AppleBodies.request(try chain.sign(AppleBodies.notification(signedDate: -62_135_596_800_000)))
        #expect(await chain.source().reason(farPast) == .certificateExpired)
        // An unsigned payload with such a date gets no further; with a date, as far as the chain.
        let forged = GoogleFixtures.segment(#"{"alg":"ES256","x5c":["AA==","AA==","AA=="]}"#) + "."
            + GoogleFixtures.segment(#"{"signedDate":-9223372036854775808}"#) + ".AA"
        #expect(await chain.source().reason(AppleBodies.request(forged)) == .malformedJWS)
        let dated = GoogleFixtures.segment(#"{"alg":"ES256","x5c":["AA==","AA==","AA=="]}"#) + "."
            + GoogleFixtures.segment(#"{"signedDate":-62135596800000}"#) + ".AA"
        #expect(await chain.source().reason(AppleBodies.request(dated)) == .invalidCertificate)
    }

    @Test("floor division by 1000 holds at the ends of Int64", arguments: [
        (Int64.min, -9_223_372_036_854_776), (Int64.max, 9_223_372_036_854_775), (-1, -1), (-1000, -1), (-1001, -2), (0, 0), (1999, 1),
    ] as [(Int64, Int64)])
    func floorDivision(value: Int64, expected: Int64) {
        #expect(AppleSource.floorDiv(value, 1000) == expected)
    }

    @Test("Apple: a signed price whose micros overflow Int64 leaves the price out")
    func applePrice() async throws {
        let chain = try AppleTestChain()
        let transaction = AppleBodies.transaction().replacingOccurrences(of: #""price":4990"#, with: #""price":9223372036854775807"#)
        let jws = try chain.sign(AppleBodies.notification(transactionJWS: try chain.sign(transaction)))
        let event = try #require(try await chain.source().handle(AppleBodies.request(jws)).events.first)
        #expect(event.price == nil)
        #expect(event.transaction?.id == "1001")
    }

    @Test("Google: iat, nbf and exp at the ends of Int64 are judged, not trapped on")
    func googleTokenTimes() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        let body = GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.subscription(4)))
        let now = GoogleFixtures.nowSeconds
        let cases: [(String, WebhookReason?)] = [
            (GoogleFixtures.claims(iat: Int64.min, exp: Int64.min + 1), .tokenExpired),
            (GoogleFixtures.claims(iat: Int64.max - 1, exp: Int64.max), .tokenNotYetValid),
            (GoogleFixtures.claims(iat: now - 30, exp: now + 60, extra: [#""nbf":9223372036854775807"#]), .tokenNotYetValid),
            (GoogleFixtures.claims(iat: now - 30, exp: Int64.max), nil),
        ]
        for (claims, reason) in cases {
            #expect(await source.reason(GoogleFixtures.request(body, token: f.token(claims: claims)))?.code == reason?.code, "\(claims)")
        }
    }
}
