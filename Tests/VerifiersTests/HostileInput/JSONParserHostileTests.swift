import Testing
@testable import Toolkit
@testable import Verifiers

/// The strict JSON parser against inputs built to hurt it. Each ends in a value or a
/// refusal (nil), never a crash; `SenderHostileInputTests` sends the same through the senders.
@Suite("Hostile JSON")
struct JSONParserHostileTests {
    static func parse(_ text: String) -> JSONValue? { JSONValue.parse(Array(text.utf8)) }

    @Test("nesting is bounded: 64 levels parse, 65 and 100k are refused without exhausting the stack")
    func deepNesting() {
        let depth = JSONParser.maxDepth
        #expect(Self.parse(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)) != nil)
        #expect(Self.parse(String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)) == nil)
        #expect(Self.parse(String(repeating: "[", count: 100_000)) == nil)
        #expect(Self.parse(String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)) == nil)
        #expect(Self.parse(String(repeating: #"{"a":"#, count: 100_000)) == nil)
        #expect(Self.parse(String(repeating: #"[{"a":"#, count: 50_000)) == nil)
    }

    @Test("huge numbers keep their text; reading them never traps", arguments: [
        ("1e400", false), ("-1E-400", false), ("1234567890123456789012345678901234567890", true),
        ("-1234567890123456789012345678901234567890", true), ("9223372036854775808", true), ("1E+2", false),
        ("0.000000000000000000000000000000000000001", false), ("-0", true), ("-0.0e0", false),
    ])
    func hugeNumbers(text: String, integral: Bool) throws {
        let value = try #require(Self.parse("[\(text)]")?.array?.first)
        #expect(value == .number(JSONNumber(text: text, isIntegral: integral)))
        #expect(value.int64 == nil || text == "-0")
        #expect(value.double != nil)
    }

    @Test("integers read as Int64 only when they fit exactly")
    func int64Edges() {
        #expect(Self.parse("9223372036854775807")?.int64 == Int64.max)
        #expect(Self.parse("-9223372036854775808")?.int64 == Int64.min)
        #expect(Self.parse("-0")?.int64 == 0)
        #expect(Self.parse("1e400")?.double == .infinity)
        #expect(Self.parse("1e2")?.int64 == nil)
    }

    @Test("what RFC 8259 does not call a number is refused", arguments: [
        "01", "-01", "1.", ".5", "+1", "1e", "1e+", "-", "0x10", "Infinity", "-Infinity", "NaN", "1_000", "1.5.5", "--1",
    ])
    func invalidNumbers(text: String) {
        #expect(Self.parse(text) == nil)
        #expect(Self.parse("[\(text)]") == nil)
    }

    @Test("a key given twice is refused, at any depth and however it is spelled", arguments: [
        #"{"a":1,"a":2}"#, #"{"a":1,"a":1}"#, #"{"x":{"a":1,"b":2,"a":3}}"#, #"[{"a":null,"a":null}]"#,
        #"{"a":1,"\u0061":2}"#,
        // Canonically equivalent keys are one Swift String, so one Dictionary key: refused, not merged.
        #"{"\u00e9":1,"e\u0301":2}"#,
    ])
    func duplicateKeys(text: String) {
        #expect(Self.parse(text) == nil)
    }

    @Test("invalid UTF-8 inside or outside strings is refused", arguments: [
        [0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE6, 0xBC], [0x80], [0xF0, 0x9F, 0x98],
    ] as [[UInt8]])
    func invalidUTF8(bytes: [UInt8]) {
        #expect(JSONValue.parse(Array(#"{"k":""#.utf8) + bytes + Array(#""}"#.utf8)) == nil)
        #expect(JSONValue.parse(Array(#"{""#.utf8) + bytes + Array(#"":1}"#.utf8)) == nil)
        #expect(JSONValue.parse(Array("[".utf8) + bytes + Array("]".utf8)) == nil)
    }

    @Test("escapes that name no Unicode scalar are refused", arguments: [
        #"["\ud800"]"#, #"["\udc00"]"#, #"["\udc00\ud800"]"#, #"["\ud800\u0041"]"#, #"["\ud800x"]"#, #"["\u12"]"#, #"["\x41"]"#,
    ])
    func invalidEscapes(text: String) {
        #expect(Self.parse(text) == nil)
    }

    @Test("valid UTF-8 and escapes come out as the same text")
    func validText() {
        #expect(Self.parse(#"["\ud83d\ude00 é 漢 \u0000"]"#)?.array?.first?.string == "😀 é 漢 \u{0}")
    }

    @Test("very long strings and many members parse whole")
    func longInput() throws {
        let long = String(repeating: "x", count: 4 << 20)
        #expect(Self.parse(#"{"k":"\#(long)"}"#)?["k"]?.string?.utf8.count == 4 << 20)
        let escaped = String(repeating: #"\n"#, count: 1 << 20)
        #expect(Self.parse(#"["\#(escaped)"]"#)?.array?.first?.string?.utf8.count == 1 << 20)
        let members = (0..<100_000).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        #expect(try #require(Self.parse("{\(members)}")?.object).count == 100_000)
        #expect(Self.parse(#"{"k":""# + long) == nil)
    }
}
