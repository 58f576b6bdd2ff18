import Config
import Foundation
import Logging

enum LoggingSetup {
    /// Installs the process-wide log handler once: JSON lines or readable text, on stderr; either
    /// escapes what could forge a line or a field (`LogEscaping`).
    static func bootstrap(_ settings: LogSettings) -> Logger {
        let level = Logger.Level(rawValue: settings.level) ?? .info
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = settings.format == .json
                ? JSONLogHandler(label: label) : TextLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "tollgate")
    }

    /// For operator commands, whose output is their own: only warnings and errors reach stderr.
    static func quiet() -> Logger {
        var logger = Logger(label: "tollgate") { TextLogHandler(label: $0) }
        logger.logLevel = .warning
        return logger
    }
}
