/// RFC 3986 percent-encoding: every byte but the unreserved characters (`A-Z a-z 0-9 - . _ ~`)
/// becomes `%XX`. Safe both as a URL path segment and as an `x-www-form-urlencoded` value.
public enum PercentEncoding {
    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One path segment; nil for "", "." and "..", which a URL would drop or resolve rather than send.
    public static func pathSegment(_ text: String) -> String? {
        guard !text.isEmpty, text != ".", text != ".." else { return nil }
        return encode(text)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
