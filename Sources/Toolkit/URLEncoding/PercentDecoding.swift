/// Strict `%XX` decoding (RFC 3986 section 2.1): a `%` not followed by two hex digits is an error,
/// not a literal, so one text has one meaning.
public enum PercentDecoding {
    /// The decoded bytes; `plusIsSpace` applies the form rule (`+` is a space). Nil on a bad escape.
    public static func decode(_ text: some Collection<UInt8>, plusIsSpace: Bool) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var iterator = text.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                out.append(high << 4 | low)
            case UInt8(ascii: "+") where plusIsSpace:
                out.append(UInt8(ascii: " "))
            default:
                out.append(byte)
            }
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
