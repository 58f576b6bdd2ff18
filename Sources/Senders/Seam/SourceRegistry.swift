import Config
import Events
import Toolkit

/// Where senders are registered: adding a sender means one folder and one line here.
public struct SourceRegistry: Sendable {
    private let sources: [SourceName: any WebhookSource]

    /// `fetcher` is the network for checks that need it (OCSP, Google's key set); nil keeps every sender offline.
    public init(settings: SourcesSettings, fetcher: (any HTTPFetcher)? = nil) throws(ConfigError) {
        var sources: [SourceName: any WebhookSource] = [:]
        sources[.iaptic] = IapticSource(settings: settings.iaptic)
        sources[.apple] = try AppleSource(settings: settings.apple, fetcher: fetcher)
        sources[.citcon] = CitconSource(settings: settings.citcon)
        sources[.alipayplus] = try AlipayPlusSource(settings: settings.alipayplus)
        sources[.google] = try GoogleSource(settings: settings.google, fetcher: fetcher)
        self.sources = sources
    }

    /// The sender for a route, or nil while it is not implemented (the route answers 501).
    public func source(_ name: SourceName) -> (any WebhookSource)? { sources[name] }

    /// What keeps senders from accepting deliveries right now, one line each (for `/readyz`).
    public func readinessProblems(now: Timestamp) async -> [String] {
        var problems: [String] = []
        for name in SourceName.allCases {
            if let problem = await sources[name]?.readinessProblem(now: now) { problems.append(problem) }
        }
        return problems
    }
}
