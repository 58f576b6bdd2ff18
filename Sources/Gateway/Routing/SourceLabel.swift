import Events

/// The `source` label of a rejection, from the path the request was addressed to: the sender of
/// `/webhooks/<source>` (or `/webhooks/<source>/<account>` where accounts are routed), "none" for every
/// other path, so probing random paths cannot create label values.
enum SourceLabel {
    static func of(path: String, accountRoutes: Set<String>) -> String {
        let prefix = "/webhooks/"
        guard path.hasPrefix(prefix) else { return "none" }
        var route = Substring(path)
        if let slash = path.lastIndex(of: "/"), accountRoutes.contains(String(path[..<slash])) { route = path[..<slash] }
        return SourceName(rawValue: String(route.dropFirst(prefix.count))).map(\.rawValue) ?? "none"
    }
}
