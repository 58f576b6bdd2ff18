/// The one place that decides how a logged value is written, for both log formats: request values
/// reach log lines (an Apple `alg`, a Citcon `fields` name, an Alipay+ `Client-Id` inside a
/// rejection's detail), and a value must never start a line or a field of its own.
///
/// Escaped: every C0 control (newline, carriage return, tab...), DEL, the C1 controls (U+0085 NEL is
/// a line break to some readers), U+2028 and U+2029 (line and paragraph separators), and the
/// bidirectional controls (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), which can make a
/// line display differently from what it holds. Everything else is the text's own UTF-8.
enum LogEscaping {
    /// True for a scalar written as an escape in either format.
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// `\uXXXX` (four hex digits: every unsafe scalar is in the Basic Multilingual Plane).
    private static func appendUnicodeEscape(_ value: UInt32, to out: inout [UInt8]) {
        out += [UInt8(ascii: "\\"), UInt8(ascii: "u"),
                hex[Int((value >> 12) & 0xF)], hex[Int((value >> 8) & 0xF)], hex[Int((value >> 4) & 0xF)], hex[Int(value & 0xF)]]
    }

    /// The short escapes both formats share; nil for a scalar written as `\uXXXX`.
    private static func shortEscape(_ scalar: Unicode.Scalar) -> UInt8? {
        switch scalar {
        case "\n": UInt8(ascii: "n")
        case "\r": UInt8(ascii: "r")
        case "\t": UInt8(ascii: "t")
        case "\"": UInt8(ascii: "\"")
        case "\\": UInt8(ascii: "\\")
        default: nil
        }
    }

    /// A JSON string (RFC 8259): quote, backslash and the unsafe scalars escaped. A JSON parser reads
    /// back the exact text.
    static func appendJSONString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        appendEscaped(text, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// A text-format value: as it is when it holds nothing but safe characters other than space,
    /// `=`, `"` and `\` (and is not empty); otherwise in double quotes with the JSON escapes, so a
    /// value can neither end its line nor look like a further `key=value` field.
    static func appendTextValue(_ text: String, to out: inout [UInt8]) {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
            !isUnsafe(scalar) && scalar != " " && scalar != "=" && scalar != "\"" && scalar != "\\"
        }
        if plain {
            out += text.utf8
        } else {
            appendJSONString(text, to: &out)
        }
    }

    /// Free text (the message, at the end of a text line): the unsafe scalars and the backslash
    /// escaped, nothing quoted.
    static func appendTextMessage(_ text: String, to out: inout [UInt8]) {
        for scalar in text.unicodeScalars {
            if scalar == "\"" {
                out.append(UInt8(ascii: "\""))
            } else if scalar == "\\" || isUnsafe(scalar) {
                appendEscape(scalar, to: &out)
            } else {
                Unicode.UTF8.encode(scalar) { out.append($0) }
            }
        }
    }

    private static func appendEscaped(_ text: String, to out: inout [UInt8]) {
        // Fast path: most logged text is printable ASCII.
        for byte in text.utf8 where byte < 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            for scalar in text.unicodeScalars {
                if scalar == "\"" || scalar == "\\" || isUnsafe(scalar) {
                    appendEscape(scalar, to: &out)
                } else {
                    Unicode.UTF8.encode(scalar) { out.append($0) }
                }
            }
            return
        }
        out += text.utf8
    }

    private static func appendEscape(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
        if let short = shortEscape(scalar) {
            out += [UInt8(ascii: "\\"), short]
        } else {
            appendUnicodeEscape(scalar.value, to: &out)
        }
    }
}
