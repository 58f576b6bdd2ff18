import Events
import Verifiers

/// The webhook paths the registry's senders are served on, and the `source` label of a rejection
/// from the path it was addressed to: the sender of `/webhooks/<source>` (or `/webhooks/<source>/<account>`
/// where accounts are routed), "none" for every other path, so probing random paths cannot create label values.
struct WebhookRoutes: Sendable {
    /// `/webhooks/<name>` -> the sender.
    private let senders: [String: SourceName]
    /// The webhook paths that also take one more segment (an account name), POST only.
    let accountPaths: Set<String>

    init(_ registry: SourceRegistry) {
        var senders: [String: SourceName] = [:]
        var accountPaths = Set<String>()
        for sender in registry.senders {
            let path = Self.path(sender.source.name)
            senders[path] = sender.source.name
            if sender.routesAccounts { accountPaths.insert(path) }
        }
        self.senders = senders
        self.accountPaths = accountPaths
    }

    static func path(_ source: SourceName) -> String { "/webhooks/\(source.rawValue)" }

    var paths: Dictionary<String, SourceName>.Keys { senders.keys }

    func sourceLabel(path: String) -> String {
        if let name = senders[path] { return name.rawValue }
        guard let slash = path.lastIndex(of: "/"), accountPaths.contains(String(path[..<slash])) else { return "none" }
        return senders[String(path[..<slash])]?.rawValue ?? "none"
    }
}
