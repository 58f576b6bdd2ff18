import Events

/// The senders' verifiers, built from the configuration by `SenderCatalog.registry`: what the
/// gateway routes and `/readyz` asks.
public struct SourceRegistry: Sendable {
    /// One sender as the gateway serves it.
    public struct Sender: Sendable {
        public let source: any WebhookSource
        /// `/webhooks/<name>/<account>` routes too.
        public let routesAccounts: Bool
        /// The sender's own request headers kept beside the raw body (`SenderDefinition.keptRequestHeaders`).
        public let keptRequestHeaders: [String]

        public init(source: any WebhookSource, routesAccounts: Bool = false, keptRequestHeaders: [String] = []) {
            self.source = source
            self.routesAccounts = routesAccounts
            self.keptRequestHeaders = keptRequestHeaders
        }
    }

    /// In catalog order.
    public let senders: [Sender]

    public init(_ senders: [Sender]) { self.senders = senders }

    public var names: [SourceName] { senders.map(\.source.name) }

    public func sender(_ name: SourceName) -> Sender? { senders.first { $0.source.name == name } }

    public func source(_ name: SourceName) -> (any WebhookSource)? { sender(name)?.source }

    /// What keeps senders from accepting deliveries right now, one line each (for `/readyz`).
    public func readinessProblems(now: Timestamp) async -> [String] {
        var problems: [String] = []
        for sender in senders {
            if let problem = await sender.source.readinessProblem(now: now) { problems.append(problem) }
        }
        return problems
    }
}
