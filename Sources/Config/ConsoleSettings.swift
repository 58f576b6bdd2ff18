/// The operator console (docs/console.md): served by `tollgate work` and `tollgate dev` when an
/// operator credential is configured (`api.tokens` with `kind: operator`).
public struct ConsoleSettings: Sendable {
    /// Where its pages are served.
    public var path = "/console"
    /// How long a sign-in lasts.
    public var sessionMinutes = 480
    /// How long the projection keeps each purchase's history (the events that touched it, their
    /// outcome and the entitlements they changed) for the console's purchase pages.
    public var historyDays = 90
    /// The gateway replicas' `/metrics` URLs the overview samples (deliveries and refusals per sender, silence,
    /// the spool); `tollgate dev` and `tollgate work` also read their own process's.
    public var gatewayMetrics: [String] = []
    public init() {}
}

extension ConfigLoader {
    static func readOperator(_ t: ConfigReader, token: String) throws(ConfigError) -> APIToken {
        guard token.count >= 32 else {
            throw ConfigError(key: t.name("token"), message: "an operator credential opens the console: use at least 32 characters")
        }
        guard let name = try t.string("name"), !name.isEmpty, name.count <= 64,
              name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.@ ".contains($0) }) else {
            throw ConfigError(key: t.name("name"), message: "name the operator (up to 64 letters, digits, spaces, - _ . @): the audit names who acted")
        }
        guard try t.strings("apps").isEmpty, try !t.bool("refunds", default: false) else {
            throw ConfigError(key: t.name("kind"), message: "an operator credential answers no merchant API: give it no apps or refunds")
        }
        return APIToken(token, kind: .operator, name: name, actions: try t.bool("actions", default: false))
    }

    static func readConsole(_ s: ConfigReader) throws(ConfigError) -> ConsoleSettings {
        var c = ConsoleSettings()
        c.path = try s.string("path", default: c.path)
        guard c.path.hasPrefix("/"), c.path.count > 1, !c.path.hasSuffix("/"), !c.path.contains("//"),
              c.path.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "/-_".contains($0)) }) else {
            throw ConfigError(key: s.name("path"), message: "expected a path such as /console (letters, digits, / - _; no // or trailing /)")
        }
        // The routes it would share a server with: the merchant APIs, the webhooks, health, Sileo's default.
        for taken in ["/v1", "/webhooks", "/healthz", "/readyz", "/metrics", "/sileo"]
        where c.path == taken || c.path.hasPrefix(taken + "/") {
            throw ConfigError(key: s.name("path"), message: "\(taken) is served by Tollgate already: choose another path")
        }
        c.sessionMinutes = try s.int("sessionMinutes", default: c.sessionMinutes, range: 5...10_080)
        c.historyDays = try s.int("historyDays", default: c.historyDays, range: 1...3_650)
        c.gatewayMetrics = try s.strings("gatewayMetrics")
        guard c.gatewayMetrics.count <= 16 else {
            throw ConfigError(key: s.name("gatewayMetrics"), message: "at most 16 gateway replicas' /metrics URLs")
        }
        for url in c.gatewayMetrics {
            guard url.hasPrefix("http://") || url.hasPrefix("https://"), url.utf8.count <= 512,
                  !url.contains(where: { $0.isWhitespace || $0 == "@" }) else {
                throw ConfigError(key: s.name("gatewayMetrics"),
                                  message: "expected http(s) URLs of the gateways' /metrics, such as http://gateway-0:9090/metrics (no credentials in the URL)")
            }
        }
        return c
    }
}
