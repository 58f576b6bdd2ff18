import Foundation
import Logging
import Testing
@testable import tollgate

@Suite("JSON log lines")
struct JSONLogLineTests {
    func line(_ message: String, _ metadata: Logger.Metadata) throws -> [String: Any] {
        let bytes = JSONLogLine.encode(timestamp: "2026-11-22T00:00:00.000Z", level: "info", logger: "tollgate",
                                       message: message, metadata: metadata)
        #expect(!bytes.contains(0x0A), "one line: no raw newline inside")
        let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        return try #require(object)
    }

    @Test("fixed fields first, then metadata in key order; every value a valid JSON string")
    func shape() throws {
        let bytes = JSONLogLine.encode(timestamp: "T", level: "notice", logger: "gw", message: "m",
                                       metadata: ["z": "1", "a": .stringConvertible(42), "ce_id": "x"])
        #expect(String(decoding: bytes, as: UTF8.self)
            == #"{"ts":"T","level":"notice","logger":"gw","msg":"m","a":"42","ce_id":"x","z":"1"}"#)
    }

    @Test("quotes, backslashes, control characters and non-ASCII text survive a JSON parser unchanged")
    func escaping() throws {
        let hostile = "a\"b\\c\nd\re\tf\u{0}g\u{1F}h\u{7F}i/é€𝄞\u{2028}"
        let parsed = try line(hostile, ["detail": .string(hostile), "list": .array(["x\"", .dictionary(["k\n": "v\\"])])])
        #expect(parsed["msg"] as? String == hostile)
        #expect(parsed["detail"] as? String == hostile)
        let list = try #require(parsed["list"] as? [Any])
        #expect(list.first as? String == "x\"")
        #expect((list.last as? [String: String]) == ["k\n": "v\\"])
    }

    @Test("metadata cannot replace the fixed fields")
    func fixedFieldsWin() throws {
        let parsed = try line("real", ["msg": "forged", "level": "error", "ts": "0", "logger": "x", "other": "kept"])
        #expect(parsed["msg"] as? String == "real")
        #expect(parsed["level"] as? String == "info")
        #expect(parsed["ts"] as? String == "2026-11-22T00:00:00.000Z")
        #expect(parsed["logger"] as? String == "tollgate")
        #expect(parsed["other"] as? String == "kept")
    }
}
