import Foundation
import Logging
import Testing
@testable import tollgate

@Suite("Text log lines")
struct TextLogLineTests {
    func line(_ message: String, _ metadata: Logger.Metadata) -> String {
        String(decoding: TextLogLine.encode(timestamp: "2026-11-22T00:00:00.000Z", level: "notice", logger: "tollgate",
                                            source: "Gateway", message: message, metadata: metadata), as: UTF8.self)
    }

    @Test("metadata in key order; plain values bare, values with spaces quoted")
    func shape() {
        #expect(line("delivery rejected", ["source": "apple", "detail": "alg x is not accepted", "empty": ""])
            == #"2026-11-22T00:00:00.000Z notice tollgate: detail="alg x is not accepted" empty="" source=apple [Gateway] delivery rejected"#)
    }

    @Test("a value cannot end the line or add a field: controls, NEL, U+2028, bidi controls, quotes and = escaped")
    func hostile() {
        let hostile = "ES256\n2026-01-01T00:00:00Z critical tollgate: forged\r\u{0}\u{7F}\u{85}\u{2028}\u{2029}\u{202E}\u{2066}\"\\ reason=ok"
        let text = line("m\nforged", ["detail": .string(hostile), "list": .array([.string("a\nb")])])
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || [0x2028, 0x2029, 0x202E, 0x2066].contains($0.value) })
        #expect(text.contains(#"detail="ES256\n2026-01-01T00:00:00Z critical tollgate: forged\r\u0000\u007f\u0085\u2028\u2029\u202e\u2066\"\\ reason=ok""#), "\(text)")
        #expect(text.hasSuffix(#"[Gateway] m\nforged"#))
        #expect(text.components(separatedBy: " reason=").count == 2, "the only reason= is inside the quoted value")
    }

    @Test("the JSON format escapes the same characters and still parses back to the exact text")
    func jsonAgrees() throws {
        let hostile = "a\u{85}b\u{2028}c\u{202E}d\u{7F}"
        let bytes = JSONLogLine.encode(timestamp: "T", level: "info", logger: "x", message: "m", metadata: ["v": .string(hostile)])
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#""v":"a\u0085b\u2028c\u202ed\u007f""#), "\(text)")
        let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        #expect(object?["v"] as? String == hostile)
    }
}
