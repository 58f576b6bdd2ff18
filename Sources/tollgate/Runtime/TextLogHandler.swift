import Events
import Logging

/// The readable format (`log.format: text`), one line per event on stderr:
/// `<ts> <level> <logger>: key=value key="a value" [<module>] <message>`, the metadata in key order.
/// A value with a space, `=`, a quote, a backslash or an unsafe character is quoted and escaped
/// (`LogEscaping`), so what a request sends can neither end the line nor add a field.
struct TextLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = event.metadata.map { metadata.merging($0) { $1 } } ?? metadata
        if let error = event.error { fields["error"] = .string("\(error)") }
        var line = TextLogLine.encode(timestamp: Timestamp.now.rfc3339, level: event.level.rawValue, logger: label,
                                      source: event.source, message: event.message.description, metadata: fields)
        line.append(0x0A)
        StandardError.write(line)
    }
}

enum TextLogLine {
    static func encode(timestamp: String, level: String, logger: String, source: String, message: String,
                       metadata: Logger.Metadata) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160 + message.utf8.count)
        LogEscaping.appendTextValue(timestamp, to: &out)
        out.append(UInt8(ascii: " "))
        LogEscaping.appendTextValue(level, to: &out)
        out.append(UInt8(ascii: " "))
        LogEscaping.appendTextValue(logger, to: &out)
        out.append(UInt8(ascii: ":"))
        for key in metadata.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            guard let value = metadata[key] else { continue }
            out.append(UInt8(ascii: " "))
            LogEscaping.appendTextValue(key, to: &out)
            out.append(UInt8(ascii: "="))
            LogEscaping.appendTextValue(describe(value), to: &out)
        }
        out += " [".utf8
        LogEscaping.appendTextMessage(source, to: &out)
        out += "] ".utf8
        LogEscaping.appendTextMessage(message, to: &out)
        return out
    }

    /// A list or mapping as one value, written as swift-log describes it (then escaped as a whole).
    private static func describe(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array, .dictionary: value.description
        }
    }
}
