/// The DER inside one PEM block, decoded strictly (RFC 7468: base64 lines between the boundaries).
enum PEM {
    /// The first `-----BEGIN <label>-----` block's bytes, or nil when there is none or it is not base64.
    static func der(in text: String, label: String) -> [UInt8]? {
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex) else {
            return nil
        }
        return base64Body(text[start.upperBound..<stop.lowerBound])
    }

    /// Standard base64 with line breaks and spaces removed (PEM bodies, keys pasted from dashboards).
    static func base64Body(_ text: Substring) -> [UInt8]? {
        let compact = text.unicodeScalars.filter { !" \t\r\n".unicodeScalars.contains($0) }
        guard !compact.isEmpty else { return nil }
        return Base64.decodeStandard(String(String.UnicodeScalarView(compact)))
    }

    /// A PEM block: base64 in 64-character lines between the boundaries.
    static func encode(_ der: [UInt8], label: String) -> String {
        var lines = ["-----BEGIN \(label)-----"]
        var rest = Substring(Base64.encodeStandard(der))
        while !rest.isEmpty {
            lines.append(String(rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }
}
