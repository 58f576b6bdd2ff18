import Config
import Events
import Foundation
import Logging

enum LoggingSetup {
    /// Installs the process-wide log handler once: JSON lines or readable text, on stderr.
    static func bootstrap(_ settings: LogSettings) -> Logger {
        let level = Logger.Level(rawValue: settings.level) ?? .info
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = settings.format == .json
                ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "tollgate")
    }

    /// For operator commands, whose output is their own: only warnings and errors reach stderr.
    static func quiet() -> Logger {
        var logger = Logger(label: "tollgate") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        return logger
    }
}

/// One JSON object per line: `ts`, `level`, `logger`, `msg`, then the metadata fields.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: Any] = [
            // Not a new ISO8601DateFormatter per line: building one cost about 0.4 ms of CPU, more
            // than verifying and publishing an Iaptic delivery (make bench, docs/performance.md).
            "ts": Timestamp.now.rfc3339,
            "level": event.level.rawValue,
            "logger": label,
            "msg": event.message.description,
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for (key, value) in merged where object[key] == nil { object[key] = Self.plain(value) }
        guard var data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        data.append(0x0A)
        FileHandle.standardError.write(data)
    }

    private static func plain(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let items): items.map(plain)
        case .dictionary(let dict): dict.mapValues(plain)
        }
    }
}
