import Events

/// The `webhooks` section (docs/configuration.md, docs/outbound-webhooks.md).
extension ConfigLoader {
    static func readWebhooks(_ s: ConfigReader, senders: [SourceName]) throws(ConfigError) -> WebhookSettings {
        var w = WebhookSettings()
        w.allowLoopback = try s.bool("allowLoopback", default: w.allowLoopback)
        let schedule = try s.strings("retryScheduleMs")
        if !schedule.isEmpty {
            var parsed: [Int] = []
            for text in schedule {
                guard let ms = Int(text), (0...86_400_000).contains(ms) else {
                    throw ConfigError(key: s.name("retryScheduleMs"), message: "expected milliseconds in 0...86400000, got \"\(text)\"")
                }
                parsed.append(ms)
            }
            guard parsed.count <= 32 else {
                throw ConfigError(key: s.name("retryScheduleMs"), message: "at most 32 attempts, got \(parsed.count)")
            }
            w.retryScheduleMs = parsed
        }
        w.disableAfterSeconds = try s.int("disableAfterSeconds", default: w.disableAfterSeconds, range: 1...31_536_000)
        w.caFile = try s.path("caFile")
        w.maxConcurrentDeliveries = try s.int("maxConcurrentDeliveries", default: w.maxConcurrentDeliveries, range: 1...4_096)
        w.retentionDays = try s.int("retentionDays", default: w.retentionDays, range: 1...365)
        w.endpoints = try s.list("endpoints") { (e) throws(ConfigError) in try readEndpoint(e, senders: senders) }
        var seen: Set<String> = []
        for endpoint in w.endpoints where !seen.insert(endpoint.name).inserted {
            throw ConfigError(key: s.name("endpoints"), message: "two endpoints are named \"\(endpoint.name)\"")
        }
        return w
    }

    private static func readEndpoint(_ e: ConfigReader, senders: [SourceName]) throws(ConfigError) -> WebhookSettings.Endpoint {
        let name = try e.requiredString("name")
        guard (1...64).contains(name.utf8.count), name.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }) else {
            throw ConfigError(key: e.name("name"), message: "expected 1 to 64 of a-z, 0-9 and -, got \"\(name)\"")
        }
        let url = try e.requiredString("url")
        // Never quoted back: a URL may carry a token in its path or query.
        guard url.hasPrefix("https://"), url.utf8.count <= 2_048, !url.contains("#"), !url.contains(where: { $0.isWhitespace }),
              let host = EndpointURL(url)?.host, !host.isEmpty else {
            throw ConfigError(key: e.name("url"), message: "expected an https:// URL with a host, no fragment, at most 2048 bytes")
        }
        var endpoint = WebhookSettings.Endpoint(name: name, url: url)
        let kind = try e.string("kind", default: endpoint.kind.rawValue)
        guard let parsedKind = WebhookSettings.Endpoint.Kind(rawValue: kind) else {
            throw ConfigError(key: e.name("kind"), message: "expected events or forward, got \"\(kind)\"")
        }
        endpoint.kind = parsedKind
        endpoint.secrets = try e.strings("secrets")
        endpoint.signingKeys = try e.strings("signingKeys")
        guard (1...2).contains(endpoint.secrets.count) else {
            throw ConfigError(key: e.name("secrets"), message: "expected one or two whsec_ secrets (two during a rotation)")
        }
        guard endpoint.signingKeys.count <= 2 else {
            throw ConfigError(key: e.name("signingKeys"), message: "expected at most two whsk_ keys")
        }
        endpoint.apps = Set(try e.strings("apps"))
        endpoint.environments = Set(try e.strings("environments"))
        for environment in endpoint.environments where environment != "production" && environment != "sandbox" {
            throw ConfigError(key: e.name("environments"), message: "expected production or sandbox, got \"\(environment)\"")
        }
        endpoint.eventTypes = Set(try e.strings("eventTypes"))
        for type in endpoint.eventTypes where EventType(rawValue: type) == nil {
            throw ConfigError(key: e.name("eventTypes"), message: "unknown event type \"\(type)\" (tollgate describe lists them)")
        }
        endpoint.senders = Set(try e.strings("senders"))
        for sender in endpoint.senders where !senders.contains(SourceName(sender)) {
            throw ConfigError(key: e.name("senders"), message: "unknown sender \"\(sender)\" (expected one of \(senders.map(\.rawValue).sorted().joined(separator: ", ")))")
        }
        if !endpoint.senders.isEmpty, endpoint.kind != .forward {
            throw ConfigError(key: e.name("senders"), message: "filters forward endpoints only (events endpoints filter by eventTypes)")
        }
        if !endpoint.eventTypes.isEmpty, endpoint.kind == .forward {
            throw ConfigError(key: e.name("eventTypes"), message: "filters events endpoints only (forward endpoints filter by senders)")
        }
        endpoint.timeoutMs = try e.int("timeoutMs", default: endpoint.timeoutMs, range: 100...60_000)
        endpoint.enabled = try e.bool("enabled", default: endpoint.enabled)
        endpoint.allowPrivateNetwork = try e.bool("allowPrivateNetwork", default: endpoint.allowPrivateNetwork)
        return endpoint
    }
}

/// An https URL's parts, as delivery connects to them: host (brackets removed from an IPv6 literal),
/// port (443 unless given) and the path with its query.
public struct EndpointURL: Sendable, Equatable {
    public let host: String
    public let port: Int
    public let pathAndQuery: String

    public init?(_ url: String) {
        guard url.hasPrefix("https://") else { return nil }
        let rest = url.dropFirst("https://".count)
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        // A user name or password in the URL would travel in every request's Authorization header.
        guard !authority.contains("@"), !authority.isEmpty else { return nil }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x25 }) else { return nil }
        if let portText {
            guard let port = Int(portText), (1...65_535).contains(port) else { return nil }
            self.port = port
        } else {
            self.port = 443
        }
        self.host = host.lowercased()
        let path = rest[authorityEnd...]
        pathAndQuery = path.isEmpty ? "/" : String(path)
    }

    /// The URL requests are sent to: the host in lower case, as the connection's address is pinned under
    /// it (a host written otherwise would miss the pin, and the client would look the name up again).
    public var requestURL: String {
        "https://" + (host.contains(":") ? "[\(host)]" : host) + (port == 443 ? "" : ":\(port)") + pathAndQuery
    }
}
