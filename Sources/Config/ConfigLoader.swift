import Foundation

/// Loads the YAML file and the `TOLLGATE_*` environment into a validated `TollgateConfig`.
public enum ConfigLoader {
    public static let defaultPath = "./tollgate.yaml"

    /// `path` nil means `./tollgate.yaml` when it exists, else defaults plus environment. `senders`
    /// read their own sections under `sources` (`SenderCatalog.loadConfig` passes every sender's).
    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment,
                            senders: [SenderConfigSection]) throws(ConfigError) -> TollgateConfig {
        var text = ""
        var origin = "(defaults)"
        var directory: String?
        let chosen = path ?? (FileManager.default.fileExists(atPath: defaultPath) ? defaultPath : nil)
        if let chosen {
            guard let data = FileManager.default.contents(atPath: chosen) else {
                throw ConfigError(key: chosen, message: "cannot read the configuration file")
            }
            text = String(decoding: data, as: UTF8.self)
            origin = chosen
            directory = URL(fileURLWithPath: chosen).deletingLastPathComponent().path
        }
        return try parse(yaml: text, origin: origin, environment: environment, senders: senders, baseDirectory: directory)
    }

    /// `baseDirectory`: what relative paths in `yaml` resolve against (`ConfigReader.resolvePath`); nil: the working directory.
    public static func parse(yaml: String, origin: String = "(text)", environment: [String: String] = [:],
                             senders: [SenderConfigSection], baseDirectory: String? = nil) throws(ConfigError) -> TollgateConfig {
        let root = try ConfigValue.parse(yaml: yaml, origin: origin)
        let overrides = EnvironmentOverrides(environment)
        let reader = try ConfigReader(path: [], value: root, environment: overrides, baseDirectory: baseDirectory)
        let config = try read(reader, senders: senders)
        try reader.finish()
        try overrides.finish()
        return config
    }

    static func read(_ r: ConfigReader, senders: [SenderConfigSection]) throws(ConfigError) -> TollgateConfig {
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
            // A plain token is a server credential for every app; `{token, kind, apps, refunds}` limits it
            // to the apps listed; a client credential (public, in the app) must list its apps and may not refund.
            a.tokens = try s.list("tokens", scalar: { (text, itemName) throws(ConfigError) in
                guard text.count >= 16 else { throw ConfigError(key: itemName, message: "use tokens of at least 16 characters") }
                return APIToken(text)
            }, mapping: { (t) throws(ConfigError) in
                let token = try t.requiredString("token")
                guard token.count >= 16 else { throw ConfigError(key: t.name("token"), message: "use tokens of at least 16 characters") }
                let kindText = try t.string("kind", default: APIToken.Kind.server.rawValue)
                guard let kind = APIToken.Kind(rawValue: kindText) else {
                    throw ConfigError(key: t.name("kind"), message: "expected server, client or operator, got \"\(kindText)\"")
                }
                if kind == .operator { return try readOperator(t, token: token) }
                let apps = try t.strings("apps")
                let refunds = try t.bool("refunds", default: false)
                let rate = try t.optionalInt("ratePerSecond"), burst = try t.optionalInt("rateBurst")
                guard !apps.contains(where: \.isEmpty) else { throw ConfigError(key: t.name("apps"), message: "an app id is empty") }
                switch kind {
                case .server:
                    // The long form says something beyond the plain one: apps, refunds or a rate of its own.
                    guard !apps.isEmpty || refunds || rate != nil || burst != nil else {
                        throw ConfigError(key: t.name("apps"), message: "list the apps this token may ask for (a token for every app is written without apps)")
                    }
                case .client:
                    guard !apps.isEmpty else { throw ConfigError(key: t.name("apps"), message: "a client credential lists the apps it is embedded in") }
                    guard !refunds else { throw ConfigError(key: t.name("refunds"), message: "a client credential is public and may not ask for refunds") }
                case .operator: break
                }
                if let rate, !(1...1_000_000).contains(rate) { throw ConfigError(key: t.name("ratePerSecond"), message: "expected 1...1000000") }
                if let burst, !(1...10_000_000).contains(burst) { throw ConfigError(key: t.name("rateBurst"), message: "expected 1...10000000") }
                return APIToken(token, kind: kind, apps: apps.isEmpty ? nil : Set(apps), refunds: refunds, ratePerSecond: rate, rateBurst: burst)
            })
            var seen = Set<String>()
            for token in a.tokens where !seen.insert(token.token).inserted {
                throw ConfigError(key: s.name("tokens"), message: "a token is listed twice")
            }
            var names = Set<String>()
            for token in a.operators where !names.insert(token.name ?? "").inserted {
                throw ConfigError(key: s.name("tokens"), message: "two operator credentials are named \"\(token.name ?? "")\": the audit could not tell them apart")
            }
            a.userTokenKeys = try s.pathMap("userTokenKeys")
            for token in a.tokens where token.kind == .client {
                for app in (token.apps ?? []).sorted() where a.userTokenKeys[app] == nil {
                    throw ConfigError(key: s.name("userTokenKeys") + ".\(app)",
                                      message: "a client credential for \(app) acts for users only through user tokens: give the backend's P-256 public key file")
                }
            }
            a.ratePerSecond = try s.int("ratePerSecond", default: a.ratePerSecond, range: 1...1_000_000)
            a.rateBurst = try s.int("rateBurst", default: a.rateBurst, range: 1...10_000_000)
            a.clientStoreCallsPerSecond = try s.int("clientStoreCallsPerSecond", default: a.clientStoreCallsPerSecond, range: 1...100_000)
            a.clientStoreCallBurst = try s.int("clientStoreCallBurst", default: a.clientStoreCallBurst, range: 1...1_000_000)
            a.port = try s.int("port", default: a.port, range: 0...65_535)
            return a
        }
        c.metrics = try r.section("metrics") { (s) throws(ConfigError) in
            var m = MetricsSettings()
            m.port = try s.optionalInt("port")
            if let port = m.port, !(0...65_535).contains(port) {
                throw ConfigError(key: s.name("port"), message: "expected an integer in 0...65535, got \"\(port)\"")
            }
            m.host = try s.string("host").flatMap { $0.isEmpty ? nil : $0 }
            return m
        }
        if let port = c.metrics.port, port != 0, port == c.http.port || port == c.api.port {
            throw ConfigError(key: "metrics.port", message: "must differ from http.port and api.port: /metrics gets a listener of its own")
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
                    // Each delay names its tier's topic: a repeated one would be one topic feeding itself.
                    guard !k.retryDelaysMs.contains(delay) else {
                        throw ConfigError(key: s.name("retryDelaysMs"), message: "lists \(delay) twice: each delay is a tier of its own (its topic's name)")
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
            // A file's path (not `:memory:` or a `file:` URI) written in the file: the file's directory's.
            let sqlitePath = st.url.hasPrefix("sqlite:") ? String(st.url.dropFirst("sqlite:".count)) : nil
            if let sqlitePath, s.isWrittenInFile("url"), !sqlitePath.hasPrefix(":"), !sqlitePath.hasPrefix("file:") {
                st.url = "sqlite:" + s.resolvePath(sqlitePath, key: "url")
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
        c.sources = try r.section("sources") { (s) throws(ConfigError) in
            var sources = SourcesSettings()
            for sender in senders {
                sources.set(try s.section(sender.name.rawValue) { (section) throws(ConfigError) in try sender.read(section) }, for: sender.name)
            }
            return sources
        }
        c.spool = try r.section("spool") { (s) throws(ConfigError) in
            var spool = SpoolSettings()
            spool.enabled = try s.bool("enabled", default: spool.enabled)
            spool.path = try s.path("path", default: spool.path)
            if spool.path.isEmpty { throw ConfigError(key: s.name("path"), message: "must not be empty") }
            spool.maxBytes = try s.int("maxBytes", default: spool.maxBytes, range: 1_048_576...1_099_511_627_776)
            return spool
        }
        if c.spool.enabled, c.spool.maxBytes < 8 * c.http.maxBodyBytes {
            throw ConfigError(key: "spool.maxBytes", message: "must hold a few of the largest deliveries: at least 8 x http.maxBodyBytes (\(8 * c.http.maxBodyBytes))")
        }
        c.workers = try r.section("workers") { (s) throws(ConfigError) in
            var workers = WorkerSettings()
            workers.expiryPublishDelayMs = try s.int("expiryPublishDelayMs", default: workers.expiryPublishDelayMs, range: 1_000...3_600_000)
            workers.reconcileAppleIntervalSeconds = try s.int("reconcileAppleIntervalSeconds", default: workers.reconcileAppleIntervalSeconds,
                                                              range: 0...604_800)
            workers.reconcileAppleFirstRunDays = try s.int("reconcileAppleFirstRunDays", default: workers.reconcileAppleFirstRunDays, range: 1...180)
            workers.reconcileGoogleIntervalSeconds = try s.int("reconcileGoogleIntervalSeconds", default: workers.reconcileGoogleIntervalSeconds,
                                                               range: 0...604_800)
            workers.refreshIntervalSeconds = try s.int("refreshIntervalSeconds", default: workers.refreshIntervalSeconds, range: 0...86_400)
            workers.refreshSpacingSeconds = try s.int("refreshSpacingSeconds", default: workers.refreshSpacingSeconds, range: 1...86_400)
            workers.refreshPlayQueriesPerMinute = try s.int("refreshPlayQueriesPerMinute", default: workers.refreshPlayQueriesPerMinute,
                                                            range: 1...3_000)
            workers.refreshAppleRequestsPerSecond = try s.int("refreshAppleRequestsPerSecond", default: workers.refreshAppleRequestsPerSecond,
                                                              range: 1...50)
            return workers
        }
        c.purchases = try r.section("purchases") { (s) throws(ConfigError) in try readPurchases(s) }
        c.catalog = try r.section("catalog") { (s) throws(ConfigError) in try readCatalog(s) }
        let catalog = c.catalog
        c.sileo = try r.section("sileo") { (s) throws(ConfigError) in try readSileo(s, catalog: catalog) }
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
        c.limits = try r.section("limits") { (s) throws(ConfigError) in try readLimits(s, senders: senders.map(\.name)) }
        c.checkouts = try r.section("checkouts") { (s) throws(ConfigError) in try readCheckouts(s) }
        c.webhooks = try r.section("webhooks") { (s) throws(ConfigError) in try readWebhooks(s, senders: senders.map(\.name)) }
        c.console = try r.section("console") { (s) throws(ConfigError) in try readConsole(s) }
        c.silence = try r.section("silence") { (s) throws(ConfigError) in
            var silence = SilenceSettings()
            for sender in senders.map(\.name) {
                if let seconds = try s.optionalInt(sender.rawValue) {
                    guard (60...31_536_000).contains(seconds) else {
                        throw ConfigError(key: s.name(sender.rawValue), message: "expected seconds in 60...31536000, got \"\(seconds)\"")
                    }
                    silence.afterSeconds[sender] = seconds
                }
            }
            return silence
        }
        return c
    }
}
