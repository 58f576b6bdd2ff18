import Events
import Testing

@Suite("RFC 3339 timestamps")
struct TimestampTests {
    @Test("formats UTC with milliseconds", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (Int64(951_782_400_123), "2000-02-29T00:00:00.123Z"),
        (Int64(1_795_288_256_022), "2026-11-21T19:10:56.022Z"),
        (Int64(-1), "1969-12-31T23:59:59.999Z"),
    ])
    func formats(millis: Int64, text: String) {
        #expect(Timestamp(millisecondsSince1970: millis).rfc3339 == text)
        #expect(Timestamp(rfc3339: text)?.millisecondsSince1970 == millis)
    }

    @Test("parses offsets and fractions of any length")
    func parsesVariants() {
        #expect(Timestamp(rfc3339: "2021-08-14T09:47:43Z")?.rfc3339 == "2021-08-14T09:47:43.000Z")
        #expect(Timestamp(rfc3339: "2021-08-14T11:47:43.5+02:00")?.rfc3339 == "2021-08-14T09:47:43.500Z")
        #expect(Timestamp(rfc3339: "2021-08-14T09:47:43.123456789-01:30")?.rfc3339 == "2021-08-14T11:17:43.123Z")
    }

    @Test("rejects what is not RFC 3339", arguments: [
        "", "2021-08-14", "2021-08-14T09:47:43", "2021-13-14T09:47:43Z", "2021-08-14T25:00:00Z",
        "2021-08-14T09:47:43.Z", "2021-08-14T09:47:43Zjunk", "yyyy-08-14T09:47:43Z",
    ])
    func rejects(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }
}
