import Logging
import Synchronization

/// Every line a `Logger` built from it writes, at every level, as one text: label, level, message,
/// source and every metadata value (the logger's and the call's), so a test can search what any log
/// format would print.
final class CapturedLog: Sendable {
    private let lines = Mutex<[String]>([])

    var all: [String] { lines.withLock { $0 } }

    func logger(label: String) -> Logger {
        var logger = Logger(label: label) { label in Handler(label: label, log: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    private struct Handler: LogHandler {
        let label: String
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.append("\(label) \(event.level) \(event.message) source=\(event.source) \(fields)")
        }
    }
}
