/// Topic names (DESIGN.md section 2), all under one configurable prefix.
public struct TopicNames: Sendable, Equatable {
    public let prefix: String
    public let retryDelaysMs: [Int]

    public init(prefix: String = "tollgate", retryDelaysMs: [Int] = [5_000, 60_000, 600_000]) {
        self.prefix = prefix
        self.retryDelaysMs = retryDelaysMs
    }

    public func raw(_ source: SourceName) -> String { "\(prefix).raw.\(source.rawValue)" }
    public var events: String { "\(prefix).events" }
    public func retry(delayMs: Int) -> String { "\(prefix).events-retry-\(delayMs)" }
    public var deadLetter: String { "\(prefix).events-dlt" }
    public var quarantine: String { "\(prefix).quarantine" }
    public var entitlements: String { "\(prefix).entitlements" }

    /// Every topic Tollgate uses, with whether it is log-compacted.
    public var all: [(name: String, compacted: Bool)] {
        SourceName.allCases.map { (raw($0), false) }
            + [(events, false)]
            + retryDelaysMs.map { (retry(delayMs: $0), false) }
            + [(deadLetter, false), (quarantine, false), (entitlements, true)]
    }
}
