import Events
import Rejections
import TestSupport
import Testing
@testable import Verifiers

/// A credential, signature or content type given twice is refused, not resolved by picking one:
/// a proxy that reads the last copy and a verifier that reads the first could disagree.
@Suite("Duplicated single-valued headers")
struct DuplicateHeaderTests {
    @Test("a second Content-Type is 400 duplicate_header on any route")
    func contentType() async throws {
        var request = IapticFixtures.request(IapticFixtures.updated())
        #expect(await IapticFixtures.source.reason(request) == nil)
        request.headers.append(name: "content-type", value: "text/xml")
        #expect(await IapticFixtures.source.reason(request) == .duplicateHeader)
        #expect(WebhookReason.duplicateHeader.httpStatus == 400)
    }

    @Test("Alipay+: a second Signature, Client-Id or Request-Time is refused even when the first verifies")
    func alipayPlus() async throws {
        let valid = AlipayPlusFixtures.request(AlipayPlusFixtures.antomBody)
        #expect(await AlipayPlusFixtures.source.reason(valid) == nil)
        for (name, value) in [("Signature", "algorithm=RSA256,keyVersion=1,signature=AAAA"), ("Client-Id", "other"),
                              ("Request-Time", "1")] {
            var request = valid
            request.headers.append(name: name, value: value)
            #expect(await AlipayPlusFixtures.source.reason(request) == .duplicateHeader, "\(name)")
        }
    }

    @Test("Google: a second Authorization is refused even when the first verifies")
    func google() async throws {
        let f = await GoogleFixtures.shared()
        var request = GoogleFixtures.request(GoogleAuthenticationTests.body, token: f.token())
        #expect(await f.source().reason(request) == nil)
        request.headers.append(name: "Authorization", value: "Bearer x")
        #expect(await f.source().reason(request) == .duplicateHeader)
    }
}
