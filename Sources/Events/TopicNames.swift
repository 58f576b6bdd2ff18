/// Topic names (docs/topics.md), all under one configurable prefix; one raw topic per sender.
public struct TopicNames: Sendable, Equatable {
    public let prefix: String
    public let retryDelaysMs: [Int]
    /// The senders whose raw topics exist (`SenderCatalog.names`).
    public let sources: [SourceName]

    public init(prefix: String = "tollgate", retryDelaysMs: [Int] = [5_000, 60_000, 600_000], sources: [SourceName]) {
        self.prefix = prefix
        self.retryDelaysMs = retryDelaysMs
        self.sources = sources
    }

    public func raw(_ source: SourceName) -> String { "\(prefix).raw.\(source.rawValue)" }
    public var events: String { "\(prefix).events" }
    public func retry(delayMs: Int) -> String { "\(prefix).events-retry-\(delayMs)" }
    public var deadLetter: String { "\(prefix).events-dlt" }
    public var quarantine: String { "\(prefix).quarantine" }
    public var entitlements: String { "\(prefix).entitlements" }
    /// What operators did in the console: one record per action, who, what and the outcome.
    public var audit: String { "\(prefix).audit" }

    /// Every topic Tollgate uses, with whether it is log-compacted.
    public var all: [(name: String, compacted: Bool)] {
        sources.map { (raw($0), false) }
            + [(events, false)]
            + retryDelaysMs.map { (retry(delayMs: $0), false) }
            + [(deadLetter, false), (quarantine, false), (entitlements, true), (audit, false)]
    }
}
