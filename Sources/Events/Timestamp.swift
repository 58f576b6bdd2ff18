#if canImport(Glibc)
import Glibc
#endif

/// RFC 3339 timestamps in UTC with millisecond precision, e.g. `2024-05-01T12:00:00.000Z`.
/// Hand-written so formatting is fast, locale-free and identical on every platform.
public struct Timestamp: Sendable, Hashable, Comparable {
    public let millisecondsSince1970: Int64

    public init(millisecondsSince1970: Int64) { self.millisecondsSince1970 = millisecondsSince1970 }

    /// 0000-01-01T00:00:00.000Z ... 9999-12-31T23:59:59.999Z: the times RFC 3339 can write (four-digit years).
    public static let representableMilliseconds: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// Nil outside `representableMilliseconds`: a time from a request that RFC 3339 cannot write.
    public init?(representableMillisecondsSince1970 milliseconds: Int64) {
        guard Self.representableMilliseconds.contains(milliseconds) else { return nil }
        self.millisecondsSince1970 = milliseconds
    }

    /// Why a text is not a time: not RFC 3339 at all, or a time outside years 0000-9999 once its
    /// offset is applied (`0000-01-01T00:00:00+01:00`).
    public enum RFC3339Failure: Error, Sendable { case malformed, outsideYears }

    /// The wall clock, to the millisecond.
    public static var now: Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(millisecondsSince1970: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    public var rfc3339: String {
        let millis = millisecondsSince1970
        var days = millis / 86_400_000
        var rest = millis % 86_400_000
        if rest < 0 { rest += 86_400_000; days -= 1 }
        let (year, month, day) = Self.civil(fromDays: days)
        let ms = rest % 1000
        let secs = rest / 1000
        guard (0...9999).contains(year) else {
            return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secs / 3600, 2)):\(pad(secs / 60 % 60, 2)):\(pad(secs % 60, 2)).\(pad(ms, 3))Z"
        }
        // Written digit by digit into 24 bytes: this runs several times per event.
        return String(unsafeUninitializedCapacity: 24) { out in
            func put(_ value: Int64, _ width: Int, at offset: Int) {
                var v = value
                for i in stride(from: offset + width - 1, through: offset, by: -1) {
                    out[i] = UInt8(48 + v % 10)
                    v /= 10
                }
            }
            put(year, 4, at: 0); out[4] = 45
            put(month, 2, at: 5); out[7] = 45
            put(day, 2, at: 8); out[10] = 84
            put(secs / 3600, 2, at: 11); out[13] = 58
            put(secs / 60 % 60, 2, at: 14); out[16] = 58
            put(secs % 60, 2, at: 17); out[19] = 46
            put(ms, 3, at: 20); out[23] = 90
            return 24
        }
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`; `t` and `z` are accepted too. Nil
    /// for a time outside years 0000-9999 in UTC, which could not be written back.
    public init?(rfc3339 text: String) {
        guard case .success(let time) = Self.parse(rfc3339: text) else { return nil }
        self = time
    }

    /// As `init?(rfc3339:)`, saying why not.
    public static func parse(rfc3339 text: String) -> Result<Timestamp, RFC3339Failure> {
        guard let milliseconds = millisecondsSince1970(rfc3339: text) else { return .failure(.malformed) }
        guard let time = Timestamp(representableMillisecondsSince1970: milliseconds) else { return .failure(.outsideYears) }
        return .success(time)
    }

    private static func millisecondsSince1970(rfc3339 text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func num(_ start: Int, _ len: Int) -> Int64? {
            guard start + len <= b.count else { return nil }
            var v: Int64 = 0
            for c in b[start..<start + len] {
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            return v
        }
        guard let year = num(0, 4), b[4] == 45, let month = num(5, 2), b[7] == 45, let day = num(8, 2),
              b[10] == 84 || b[10] == 116 || b[10] == 32,
              let hour = num(11, 2), b[13] == 58, let minute = num(14, 2), b[16] == 58, let second = num(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var fractionMs: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 3 { fractionMs = fractionMs * 10 + Int64(b[i] - 48) }
                digits += 1; i += 1
            }
            guard digits > 0 else { return nil }
            for _ in min(digits, 3)..<3 { fractionMs *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        switch b[i] {
        case 90, 122: i += 1
        case 43, 45:
            guard let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = num(i + 4, 2) else { return nil }
            offsetMinutes = (oh * 60 + om) * (b[i] == 45 ? -1 : 1)
            i += 6
        default: return nil
        }
        guard i == b.count else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        return seconds * 1000 + fractionMs
    }

    // Howard Hinnant's civil-from-days / days-from-civil algorithms.
    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

private func pad(_ value: Int64, _ width: Int) -> String {
    let s = String(value)
    return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
}
