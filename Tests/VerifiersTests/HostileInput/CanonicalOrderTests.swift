import Testing
@testable import Toolkit
@testable import Verifiers

/// Found by FuzzJSON: keys were sorted with String's `<`, which is no total order on text that is not
/// normalized, so `canonical` (hashed into Iaptic event ids) could differ between two processes.
@Suite("Key order of canonical JSON and sorted names")
struct CanonicalOrderTests {
    @Test("canonical JSON sorts keys by UTF-8 bytes")
    func canonicalByBytes() throws {
        // Å as ANGSTROM SIGN (E2 84 AB) sorts after Æ (C3 86) by bytes, before it by String's `<`.
        let value = try #require(JSONValue.parse(Array(#"{"\u212B":1,"\u00C6":2}"#.utf8)))
        #expect(value.canonical == "{\"\u{00C6}\":2,\"\u{212B}\":1}")
    }

    @Test("the fuzzer's input has one canonical text, stable through a round trip")
    func fuzzerInput() throws {
        let input: [UInt8] = [0x7B, 0x22, 0xC3, 0xA9, 0x7D, 0x22, 0x3A, 0x31, 0x2C, 0x22, 0x65, 0xCC, 0x81, 0x22, 0x3A, 0x32, 0x7D]
        let value = try #require(JSONValue.parse(input))
        #expect(value.canonical == "{\"e\u{301}\":2,\"\u{E9}}\":1}")
        let again = try #require(JSONValue.parse(Array(value.canonical.utf8)))
        #expect(Array(again.canonical.utf8) == Array(value.canonical.utf8))
    }

    @Test("UTF8Order is a total order where String's < is not")
    func totalOrder() {
        let a = "\u{E9}}", b = "e\u{301}"
        #expect(UTF8Order.precedes(b, a) && !UTF8Order.precedes(a, b))
    }

    @Test("Iaptic purchases become events in byte order of their keys")
    func iapticOrder() async throws {
        let purchases = [("\u{212B}", IapticFixtures.purchase(id: "apple:1")), ("\u{00C6}", IapticFixtures.purchase(id: "apple:2"))]
        let body = IapticFixtures.updated(notificationId: nil, notificationTarget: nil, purchases: purchases)
        let delivery = try await IapticFixtures.source.handle(IapticFixtures.request(body))
        #expect(delivery.events.map(\.subject) == ["apple:2", "apple:1"])
    }
}
