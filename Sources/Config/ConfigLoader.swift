import Foundation

/// Loads the YAML file and the `TOLLGATE_*` environment into a validated `TollgateConfig`.
public enum ConfigLoader {
    public static let defaultPath = "./tollgate.yaml"

    /// `path` nil means `./tollgate.yaml` when it exists, else defaults plus environment.
    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> TollgateConfig {
        var text = ""
        var origin = "(defaults)"
        let chosen = path ?? (FileManager.default.fileExists(atPath: defaultPath) ? defaultPath : nil)
        if let chosen {
            guard let data = FileManager.default.contents(atPath: chosen) else {
                throw ConfigError(key: chosen, message: "cannot read the configuration file")
            }
            text = String(decoding: data, as: UTF8.self)
            origin = chosen
        }
        return try parse(yaml: text, origin: origin, environment: environment)
    }

    public static func parse(yaml: String, origin: String = "(text)", environment: [String: String] = [:]) throws(ConfigError) -> TollgateConfig {
        let root = try ConfigValue.parse(yaml: yaml, origin: origin)
        let overrides = EnvironmentOverrides(environment)
        let reader = try ConfigReader(path: [], value: root, environment: overrides)
        let config = try read(reader)
        try reader.finish()
        try overrides.finish()
        return config
    }

    private static func read(_ r: ConfigReader) throws(ConfigError) -> TollgateConfig {
        var c = TollgateConfig()
        c.http = try r.section("http") { (s) throws(ConfigError) in
            var h = HTTPSettings()
            h.host = try s.string("host", default: h.host)
            h.port = try s.int("port", default: h.port, range: 0...65_535)
            h.maxBodyBytes = try s.int("maxBodyBytes", default: h.maxBodyBytes, range: 1_024...67_108_864)
            h.idleTimeoutMs = try s.int("idleTimeoutMs", default: h.idleTimeoutMs, range: 1_000...3_600_000)
            try readHTTPHardening(s, into: &h)
            h.publicPathPrefix = try s.string("publicPathPrefix", default: "")
            if !h.publicPathPrefix.isEmpty, !h.publicPathPrefix.hasPrefix("/") {
                throw ConfigError(key: s.name("publicPathPrefix"), message: "must start with /")
            }
            return h
        }
        c.api = try r.section("api") { (s) throws(ConfigError) in
            var a = APISettings()
            a.tokens = try s.strings("tokens")
            if a.tokens.contains(where: { $0.count < 16 }) {
                throw ConfigError(key: s.name("tokens"), message: "use tokens of at least 16 characters")
            }
            a.port = try s.int("port", default: a.port, range: 0...65_535)
            return a
        }
        c.kafka = try r.section("kafka") { (s) throws(ConfigError) in
            var k = KafkaSettings()
            k.brokers = try s.string("brokers").flatMap { $0.isEmpty ? nil : $0 }
            k.topicPrefix = try s.string("topicPrefix", default: k.topicPrefix)
            // Kafka topic names: ASCII letters, digits, '.', '_', '-', at most 249 in all.
            guard !k.topicPrefix.isEmpty, k.topicPrefix.utf8.count <= 200,
                  k.topicPrefix.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) }) else {
                throw ConfigError(key: s.name("topicPrefix"), message: "use at most 200 ASCII letters, digits, '.', '_' or '-'")
            }
            k.ackTimeoutMs = try s.int("ackTimeoutMs", default: k.ackTimeoutMs, range: 100...300_000)
            k.consumerGroup = try s.string("consumerGroup", default: k.consumerGroup)
            k.partitions = try s.int("partitions", default: k.partitions, range: 1...10_000)
            k.replicationFactor = try s.int("replicationFactor", default: k.replicationFactor, range: 1...32)
            let delays = try s.strings("retryDelaysMs")
            if !delays.isEmpty {
                k.retryDelaysMs = []
                for text in delays {
                    guard let delay = Int(text), delay > 0 else {
                        throw ConfigError(key: s.name("retryDelaysMs"), message: "expected positive integers, got \"\(text)\"")
                    }
                    k.retryDelaysMs.append(delay)
                }
            }
            k.properties = try s.stringMap("properties")
            for key in k.properties.keys.sorted() where KafkaSettings.managedProperties.contains(key) {
                throw ConfigError(key: s.name("properties") + "." + key,
                                  message: "is managed by Tollgate (acks=all, idempotence, kafka.ackTimeoutMs, kafka.brokers) and cannot be overridden")
            }
            return k
        }
        // The raw body travels as one Kafka record: it must fit librdkafka's message.max.bytes.
        let messageMax = c.kafka.properties["message.max.bytes"].flatMap(Int.init) ?? 1_000_000
        if c.http.maxBodyBytes + 65_536 > messageMax {
            throw ConfigError(key: "http.maxBodyBytes", message: "must be at least 64 KiB below kafka.properties.message.max.bytes (\(messageMax)); raise both together")
        }
        c.store = try r.section("store") { (s) throws(ConfigError) in
            var st = StoreSettings()
            st.url = try s.string("url", default: st.url)
            guard st.url.hasPrefix("sqlite:") || st.url.hasPrefix("postgres://") || st.url.hasPrefix("postgresql://") else {
                throw ConfigError(key: s.name("url"), message: "expected sqlite:<path> or postgres://..., got \"\(st.url)\"")
            }
            return st
        }
        c.log = try r.section("log") { (s) throws(ConfigError) in
            var l = LogSettings()
            l.level = try s.string("level", default: l.level)
            guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(l.level) else {
                throw ConfigError(key: s.name("level"), message: "expected trace, debug, info, notice, warning, error or critical, got \"\(l.level)\"")
            }
            let format = try s.string("format", default: l.format.rawValue)
            guard let parsed = LogSettings.Format(rawValue: format) else {
                throw ConfigError(key: s.name("format"), message: "expected json or text, got \"\(format)\"")
            }
            l.format = parsed
            return l
        }
        c.sources = try r.section("sources") { (s) throws(ConfigError) in try readSources(s) }
        c.spool = try r.section("spool") { (s) throws(ConfigError) in
            var spool = SpoolSettings()
            spool.enabled = try s.bool("enabled", default: spool.enabled)
            spool.path = try s.string("path", default: spool.path)
            if spool.path.isEmpty { throw ConfigError(key: s.name("path"), message: "must not be empty") }
            spool.maxBytes = try s.int("maxBytes", default: spool.maxBytes, range: 1_048_576...1_099_511_627_776)
            return spool
        }
        if c.spool.enabled, c.spool.maxBytes < 8 * c.http.maxBodyBytes {
            throw ConfigError(key: "spool.maxBytes", message: "must hold a few of the largest deliveries: at least 8 x http.maxBodyBytes (\(8 * c.http.maxBodyBytes))")
        }
        c.dedup = try r.section("dedup") { (s) throws(ConfigError) in
            var dedup = DedupSettings()
            dedup.windowSeconds = try s.int("windowSeconds", default: dedup.windowSeconds, range: 0...86_400)
            dedup.maxEntries = try s.int("maxEntries", default: dedup.maxEntries, range: 0...10_000_000)
            return dedup
        }
        c.shutdown = try r.section("shutdown") { (s) throws(ConfigError) in
            var shutdown = ShutdownSettings()
            shutdown.gracePeriodMs = try s.int("gracePeriodMs", default: shutdown.gracePeriodMs, range: 1_000...600_000)
            shutdown.drainDelayMs = try s.int("drainDelayMs", default: shutdown.drainDelayMs, range: 0...60_000)
            if shutdown.drainDelayMs >= shutdown.gracePeriodMs {
                throw ConfigError(key: s.name("drainDelayMs"), message: "must be shorter than shutdown.gracePeriodMs")
            }
            return shutdown
        }
        c.limits = try r.section("limits") { (s) throws(ConfigError) in try readLimits(s) }
        return c
    }

    private static func required(_ value: String?, _ reader: ConfigReader, _ key: String) throws(ConfigError) -> String {
        guard let value, !value.isEmpty else { throw ConfigError(key: reader.name(key), message: "is required") }
        return value
    }

    private static func readSources(_ s: ConfigReader) throws(ConfigError) -> SourcesSettings {
        var sources = SourcesSettings()
        sources.apple = try s.section("apple") { (a) throws(ConfigError) in
            var apple = AppleSettings()
            let roots = try a.strings("roots")
            if !roots.isEmpty { apple.roots = roots }
            apple.onlineChecks = try a.bool("onlineChecks", default: false)
            apple.ocspTimeoutMs = try a.int("ocspTimeoutMs", default: apple.ocspTimeoutMs, range: 100...60_000)
            apple.ocspResponder = try a.string("ocspResponder").flatMap { $0.isEmpty ? nil : $0 }
            if let responder = apple.ocspResponder, !(responder.hasPrefix("http://") || responder.hasPrefix("https://")) {
                throw ConfigError(key: a.name("ocspResponder"), message: "expected an http:// or https:// URL")
            }
            apple.verifyNested = try a.bool("verifyNested", default: true)
            apple.strictX509 = try a.bool("strictX509", default: false)
            apple.apps = try a.list("apps") { (app) throws(ConfigError) in
                var environments = try app.strings("environments")
                if environments.isEmpty { environments = ["Production", "Sandbox"] }
                for environment in environments where !["Production", "Sandbox", "Xcode", "LocalTesting"].contains(environment) {
                    throw ConfigError(key: app.name("environments"), message: "expected Production, Sandbox, Xcode or LocalTesting, got \"\(environment)\"")
                }
                let appAppleId = try app.optionalInt("appAppleId").map(Int64.init)
                if environments.contains("Production"), appAppleId == nil {
                    throw ConfigError(key: app.name("appAppleId"), message: "is required when Production is enabled")
                }
                return AppleSettings.App(bundleId: try required(app.string("bundleId"), app, "bundleId"),
                                         appAppleId: appAppleId, environments: environments)
            }
            return apple
        }
        sources.google = try s.section("google") { (g) throws(ConfigError) in
            var google = GoogleSettings()
            google.audience = try g.string("audience").flatMap { $0.isEmpty ? nil : $0 }
            google.serviceAccountEmail = try g.string("serviceAccountEmail").flatMap { $0.isEmpty ? nil : $0 }
            google.jwks = try g.string("jwks", default: google.jwks)
            google.packages = try g.strings("packages")
            // The three go together: without any of them no push can be accepted, so a partial
            // configuration is a mistake worth stopping for.
            let configured = [google.audience != nil, google.serviceAccountEmail != nil, !google.packages.isEmpty]
            if configured.contains(true), configured.contains(false) {
                let missing = zip(["audience", "serviceAccountEmail", "packages"], configured).filter { !$0.1 }.map(\.0)
                throw ConfigError(key: g.name(missing[0]), message: "is required with the other Google settings (audience, serviceAccountEmail, packages)")
            }
            if google.packages.contains(where: \.isEmpty) { throw ConfigError(key: g.name("packages"), message: "a package name is empty") }
            if google.jwks.isEmpty { throw ConfigError(key: g.name("jwks"), message: "expected a URL or a file path") }
            if google.jwks.contains("://"), !(google.jwks.lowercased().hasPrefix("https://") || google.jwks.lowercased().hasPrefix("http://")) {
                throw ConfigError(key: g.name("jwks"), message: "expected an http:// or https:// URL or a file path")
            }
            google.playApi = try g.section("playApi") { (p) throws(ConfigError) in
                var play = GoogleSettings.PlayAPI()
                play.baseURL = try p.string("baseURL", default: play.baseURL)
                play.tokenURL = try p.string("tokenURL", default: play.tokenURL)
                play.credentialsFile = try p.string("credentialsFile")
                play.timeoutMs = try p.int("timeoutMs", default: play.timeoutMs, range: 100...120_000)
                return play
            }
            return google
        }
        sources.citcon = try s.section("citcon") { (c) throws(ConfigError) in try readCitcon(c) }
        sources.iaptic = try s.section("iaptic") { (i) throws(ConfigError) in
            var iaptic = IapticSettings()
            iaptic.apps = try i.list("apps") { (a) throws(ConfigError) in
                let app = IapticSettings.App(name: try required(a.string("name"), a, "name"), secrets: try a.strings("secrets"))
                if app.secrets.isEmpty || app.secrets.contains(where: \.isEmpty) {
                    throw ConfigError(key: a.name("secrets"), message: "needs at least one non-empty secret")
                }
                return app
            }
            try requireDistinct(iaptic.apps.map { ($0.name, $0.secrets) }, key: i.name("apps"), what: "app")
            return iaptic
        }
        sources.alipayplus = try s.section("alipayplus") { (a) throws(ConfigError) in try readAlipayPlus(a) }
        return sources
    }

    /// Names must be unique, and so must secrets: where a secret names its owner (Iaptic apps, Citcon
    /// accounts on the shared route), one shared by two would attribute deliveries to the first.
    private static func requireDistinct(_ owners: [(name: String, secrets: [String])], key: String, what: String) throws(ConfigError) {
        var names = Set<String>()
        var ownerOfSecret: [String: String] = [:]
        for (name, secrets) in owners {
            guard names.insert(name).inserted else { throw ConfigError(key: key, message: "\(what) \(name) is configured twice") }
            for secret in secrets {
                if let other = ownerOfSecret.updateValue(name, forKey: secret), other != name {
                    throw ConfigError(key: key, message: "\(what)s \(other) and \(name) share a secret")
                }
            }
        }
    }

    /// Account names become a path segment (`/webhooks/citcon/<name>`) and part of `ce_source`.
    private static let accountNameCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".unicodeScalars)

    private static func readCitcon(_ c: ConfigReader) throws(ConfigError) -> CitconSettings {
        var citcon = CitconSettings()
        citcon.accounts = try c.list("accounts") { (a) throws(ConfigError) in
            let name = try required(a.string("name"), a, "name")
            guard name.unicodeScalars.allSatisfy(accountNameCharacters.contains), name != ".", name != ".." else {
                throw ConfigError(key: a.name("name"), message: "use ASCII letters, digits, '.', '_' or '-' (it is a URL path segment), got \"\(name)\"")
            }
            let account = CitconSettings.Account(name: name, secrets: try a.strings("secrets"), tokens: try a.strings("tokens"))
            if account.secrets.isEmpty, account.tokens.isEmpty {
                throw ConfigError(key: a.name("secrets"), message: "account \(name) needs at least one UPI secret or one CHOP token")
            }
            if account.secrets.contains(where: \.isEmpty) { throw ConfigError(key: a.name("secrets"), message: "a secret is empty") }
            if account.tokens.contains(where: \.isEmpty) { throw ConfigError(key: a.name("tokens"), message: "a token is empty") }
            return account
        }
        try requireDistinct(citcon.accounts.map { ($0.name, $0.secrets + $0.tokens) }, key: c.name("accounts"), what: "account")
        return citcon
    }

    private static func readAlipayPlus(_ a: ConfigReader) throws(ConfigError) -> AlipayPlusSettings {
        var alipay = AlipayPlusSettings()
        alipay.clients = try a.list("clients") { (c) throws(ConfigError) in
            let clientId = try required(c.string("clientId"), c, "clientId")
            let keys = try c.list("platformPublicKeys", scalar: { (path, itemName) throws(ConfigError) in
                guard !path.isEmpty else { throw ConfigError(key: itemName, message: "is an empty path") }
                return AlipayPlusSettings.PlatformKey(path: path)
            }, mapping: { (k) throws(ConfigError) in
                AlipayPlusSettings.PlatformKey(path: try required(k.string("path"), k, "path"),
                                               keyVersion: try keyVersion(k, "keyVersion"))
            })
            if keys.isEmpty {
                throw ConfigError(key: c.name("platformPublicKeys"), message: "client \(clientId) needs at least one platform public key")
            }
            let merchantPrivateKey = try c.string("merchantPrivateKey").flatMap { $0.isEmpty ? nil : $0 }
            let merchantKeyVersion = try keyVersion(c, "merchantKeyVersion")
            if merchantKeyVersion != nil, merchantPrivateKey == nil {
                throw ConfigError(key: c.name("merchantKeyVersion"), message: "is only meaningful with merchantPrivateKey")
            }
            return AlipayPlusSettings.Client(clientId: clientId, platformPublicKeys: keys,
                                             merchantPrivateKey: merchantPrivateKey, merchantKeyVersion: merchantKeyVersion)
        }
        var seen = Set<String>()
        for client in alipay.clients where !seen.insert(client.clientId).inserted {
            throw ConfigError(key: a.name("clients"), message: "client \(client.clientId) is configured twice")
        }
        return alipay
    }

    private static func keyVersion(_ reader: ConfigReader, _ key: String) throws(ConfigError) -> Int? {
        guard let version = try reader.optionalInt(key) else { return nil }
        guard version >= 0 else { throw ConfigError(key: reader.name(key), message: "must not be negative, got \(version)") }
        return version
    }
}
