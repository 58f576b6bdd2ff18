/// Strict base64 decoding: one alphabet per call, no whitespace, canonical padding and trailing bits.
/// A lenient decoder would let two different strings carry the same bytes; signatures are over the
/// text, so only one spelling is accepted.
public enum Base64 {
    /// base64url without padding (JWS, RFC 7515 section 2).
    public static func decodeURL(_ bytes: ArraySlice<UInt8>) -> [UInt8]? { decode(bytes, url: true) }
    public static func decodeURL(_ text: Substring) -> [UInt8]? { decode(Array(text.utf8)[...], url: true) }

    /// Standard base64 with `=` padding (x5c, RFC 7515 section 4.1.6; Pub/Sub data).
    public static func decodeStandard(_ bytes: ArraySlice<UInt8>) -> [UInt8]? { decode(bytes, url: false) }
    public static func decodeStandard(_ text: Substring) -> [UInt8]? { decode(Array(text.utf8)[...], url: false) }
    public static func decodeStandard(_ text: String) -> [UInt8]? { decode(Array(text.utf8)[...], url: false) }

    public static func encodeURL(_ bytes: [UInt8]) -> String { encode(bytes, url: true) }
    public static func encodeStandard(_ bytes: [UInt8]) -> String { encode(bytes, url: false) }

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let standardTable = table(standardAlphabet)
    private static let urlTable = table(urlAlphabet)

    private static func table(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }

    private static func decode(_ input: ArraySlice<UInt8>, url: Bool) -> [UInt8]? {
        var bytes = input
        if !url {
            // Padding is required and only at the end: length must be a multiple of 4.
            guard bytes.count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, bytes.last == UInt8(ascii: "=") { bytes.removeLast(); padding += 1 }
            guard padding == (4 - bytes.count % 4) % 4 else { return nil }
        }
        guard bytes.count % 4 != 1 else { return nil }
        let outputCount = bytes.count * 6 / 8
        return (url ? urlTable : standardTable).withUnsafeBufferPointer { table -> [UInt8]? in
            bytes.withUnsafeBufferPointer { input -> [UInt8]? in
                var valid = true
                var accumulator: UInt32 = 0
                var bits: UInt32 = 0
                let out = [UInt8](unsafeUninitializedCapacity: outputCount) { output, initialized in
                    var written = 0
                    for char in input {
                        let value = table[Int(char)]
                        if value == 0xFF { valid = false; break }
                        accumulator = (accumulator << 6) | UInt32(value)
                        bits += 6
                        if bits >= 8 {
                            bits -= 8
                            if written < outputCount { output[written] = UInt8(truncatingIfNeeded: accumulator >> bits) }
                            written += 1
                        }
                    }
                    initialized = min(written, outputCount)
                }
                // Leftover bits must be zero, or two spellings would decode alike.
                guard valid, out.count == outputCount, accumulator & ((1 << bits) - 1) == 0 else { return nil }
                return out
            }
        }
    }

    private static func encode(_ bytes: [UInt8], url: Bool) -> String {
        let alphabet = url ? urlAlphabet : standardAlphabet
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let n = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
            if rest == 2 { out.append(alphabet[Int(n >> 6 & 63)]) }
            if !url { out += Array(repeating: UInt8(ascii: "="), count: 3 - rest) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
