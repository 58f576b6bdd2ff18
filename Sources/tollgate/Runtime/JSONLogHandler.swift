import Events
import Glibc
import Logging

/// One JSON object per line on stderr: `ts`, `level`, `logger`, `msg`, then the metadata fields in
/// key order; strings escaped by `LogEscaping`. Written by hand: `JSONSerialization` with sorted keys (locale-aware string compares
/// through Foundation bridging) cost more CPU than verifying and publishing a delivery (make bench,
/// docs/performance.md).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = event.metadata.map { metadata.merging($0) { $1 } } ?? metadata
        var line = JSONLogLine.encode(timestamp: Timestamp.now.rfc3339, level: event.level.rawValue, logger: label,
                                      message: event.message.description, metadata: fields)
        line.append(0x0A)
        StandardError.write(line)
    }
}

enum JSONLogLine {
    /// The fixed fields first; a metadata key that repeats one of them is left out, as before.
    static func encode(timestamp: String, level: String, logger: String, message: String, metadata: Logger.Metadata) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(192 + message.utf8.count)
        out.append(UInt8(ascii: "{"))
        field("ts", timestamp, into: &out)
        out.append(UInt8(ascii: ","))
        field("level", level, into: &out)
        out.append(UInt8(ascii: ","))
        field("logger", logger, into: &out)
        out.append(UInt8(ascii: ","))
        field("msg", message, into: &out)
        for key in metadata.keys.sorted(by: utf8Order) where !fixedKeys.contains(key) {
            guard let value = metadata[key] else { continue }
            out.append(UInt8(ascii: ","))
            string(key, into: &out)
            out.append(UInt8(ascii: ":"))
            self.value(value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static let fixedKeys: Set<String> = ["ts", "level", "logger", "msg"]

    private static func utf8Order(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    private static func field(_ key: String, _ text: String, into out: inout [UInt8]) {
        string(key, into: &out)
        out.append(UInt8(ascii: ":"))
        string(text, into: &out)
    }

    private static func value(_ value: Logger.Metadata.Value, into out: inout [UInt8]) {
        switch value {
        case .string(let text): string(text, into: &out)
        case .stringConvertible(let convertible): string(convertible.description, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                self.value(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let entries):
            out.append(UInt8(ascii: "{"))
            for (index, key) in entries.keys.sorted(by: utf8Order).enumerated() {
                guard let item = entries[key] else { continue }
                if index > 0 { out.append(UInt8(ascii: ",")) }
                string(key, into: &out)
                out.append(UInt8(ascii: ":"))
                self.value(item, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func string(_ text: String, into out: inout [UInt8]) { LogEscaping.appendJSONString(text, to: &out) }
}

/// Whole lines to stderr with one `write` each (lines of concurrent loggers do not interleave
/// below PIPE_BUF; longer ones rarely), retried on partial writes and EINTR; a closed stderr drops them.
enum StandardError {
    static func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            guard var next = buffer.baseAddress else { return }
            var left = buffer.count
            while left > 0 {
                let written = Glibc.write(STDERR_FILENO, next, left)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                next += written
                left -= written
            }
        }
    }
}
