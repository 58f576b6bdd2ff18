import Testing
@testable import Toolkit
@testable import Verifiers

/// The strict form parser against hostile bodies: every outcome is text that is valid UTF-8, or a refusal.
@Suite("Hostile forms")
struct FormHostileTests {
    static func parse(_ text: String) -> [String: String]? { FormBody(Array(text.utf8))?.values }

    @Test("escapes that decode to invalid UTF-8 are refused, in names and values", arguments: [
        "%FF", "%C0%AF", "%ED%A0%80", "%F4%90%80%80", "%E6%BC", "%80", "%F0%9F%98",
    ])
    func invalidUTF8(escape: String) {
        #expect(Self.parse("a=\(escape)") == nil)
        #expect(Self.parse("\(escape)=1") == nil)
        #expect(Self.parse("a=1&b=x\(escape)y") == nil)
    }

    @Test("raw bytes that are not UTF-8 are refused")
    func rawInvalidUTF8() {
        #expect(FormBody(Array("a=".utf8) + [0xFF]) == nil)
        #expect(FormBody([0xC3] + Array("=1".utf8)) == nil)
    }

    @Test("bad, truncated and doubled escapes are refused", arguments: ["%", "%4", "%G1", "%%41", "%4%41", "%+1", "% 1"])
    func badEscapes(escape: String) {
        #expect(Self.parse("a=\(escape)") == nil)
    }

    @Test("a name twice, even once escaped or canonically equivalent, is refused", arguments: [
        "a=1&a=2", "a=1&%61=2", "a&a", "%C3%A9=1&e%CC%81=2",
    ])
    func duplicateNames(text: String) {
        #expect(Self.parse(text) == nil)
    }

    @Test("valid escapes, + and multi-byte text decode exactly")
    func validText() {
        #expect(Self.parse("a=1+2%2B3&b=%E6%BC%A2%F0%9F%98%80&c&d=x=y&&") == ["a": "1 2+3", "b": "漢😀", "c": "", "d": "x=y"])
        #expect(Self.parse("n=%00") == ["n": "\u{0}"])
    }

    @Test("very long values and many pairs parse whole")
    func longInput() throws {
        let long = String(repeating: "%41", count: 1 << 20)
        #expect(Self.parse("a=\(long)")?["a"]?.utf8.count == 1 << 20)
        let pairs = (0..<100_000).map { "k\($0)=\($0)" }.joined(separator: "&")
        #expect(try #require(Self.parse(pairs)).count == 100_000)
    }
}
