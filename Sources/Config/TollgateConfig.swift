import Events

/// The whole configuration (docs/configuration.md). Defaults give a working `tollgate dev`.
public struct TollgateConfig: Sendable {
    public var http = HTTPSettings()
    public var api = APISettings()
    public var metrics = MetricsSettings()
    public var kafka = KafkaSettings()
    public var store = StoreSettings()
    public var log = LogSettings()
    public var sources = SourcesSettings()
    public var spool = SpoolSettings()
    public var dedup = DedupSettings()
    public var shutdown = ShutdownSettings()
    public var limits = LimitSettings()
    public var silence = SilenceSettings()
    public var workers = WorkerSettings()
    public var purchases = PurchaseSettings()
    public var sileo = SileoSettings()
    public var checkouts = CheckoutSettings()
    public var catalog = CatalogSettings()
    public var webhooks = WebhookSettings()
    public var console = ConsoleSettings()

    public init() {}
}

/// The entitlement workers' own settings (docs/configuration.md).
public struct WorkerSettings: Sendable {
    /// An expiry or grace period that ends with no notification is published on `tollgate.entitlements`
    /// (`active: false`) within this long of the end.
    public var expiryPublishDelayMs = 60_000
    /// How often the workers read Apple's notification history back (docs/reconciliation.md); 0: never.
    public var reconcileAppleIntervalSeconds = 3_600
    /// How far back the first Apple backfill of an app and environment reads (capped by Apple's 180/30 days).
    public var reconcileAppleFirstRunDays = 7
    /// How often the workers poll Google's voided purchases of each package; 0: never.
    public var reconcileGoogleIntervalSeconds = 21_600
    /// How often the workers look for purchases at risk and re-read them from their store (docs/reconciliation.md); 0: never.
    public var refreshIntervalSeconds = 60
    /// The least time between two scheduled reads of one purchase.
    public var refreshSpacingSeconds = 900
    /// Play Developer API queries a minute per package the at-risk refresh and the voided purchases poll
    /// may spend together (Play's default quota is 3,000 a minute per bucket; enrichment and acknowledgements need the rest).
    public var refreshPlayQueriesPerMinute = 1_000
    /// App Store Server API requests a second per app the at-risk refresh may spend (Apple allows 50 for these calls).
    public var refreshAppleRequestsPerSecond = 10
    public init() {}
}

/// Where deliveries go when Kafka does not acknowledge within `kafka.ackTimeoutMs` (docs/durability.md).
public struct SpoolSettings: Sendable {
    /// Off: such deliveries are answered 503 with Retry-After instead.
    public var enabled = true
    /// One file per gateway process (it is locked); it must outlive the process to keep its promise.
    public var path = "./.tollgate/spool.sqlite"
    /// Past this many bytes of waiting records, deliveries Kafka does not take are answered 503.
    public var maxBytes = 1_073_741_824
    public init() {}
}

/// Redeliveries of events accepted within the window are answered 2xx without publishing again.
public struct DedupSettings: Sendable {
    /// 0 turns deduplication off.
    public var windowSeconds = 600
    /// Ids remembered at most (about 150 bytes each, measured); the oldest go first.
    public var maxEntries = 100_000
    public init() {}
}

public struct ShutdownSettings: Sendable {
    /// After SIGTERM, the time allowed to finish in-flight requests, publish and close; past it (or
    /// on a second SIGTERM) the process exits at once. What was acknowledged is in Kafka or the spool.
    public var gracePeriodMs = 25_000
    /// How long `/readyz` fails before the listener closes, so load balancers stop sending first.
    public var drainDelayMs = 0
    public init() {}
}

public struct HTTPSettings: Sendable {
    public var host = "0.0.0.0"
    public var port = 8080
    public var maxBodyBytes = 262_144
    /// A connection that sends or receives nothing for this long is closed (slow clients).
    public var idleTimeoutMs = 30_000
    /// From the first byte of a request head to its last (slow-loris clients); at most `idleTimeoutMs`.
    public var headerTimeoutMs = 10_000
    /// From the end of a request head to the end of its body (bodies that stop or trickle).
    public var bodyTimeoutMs = 15_000
    /// The request line and header fields together; larger heads get 431.
    public var maxHeaderBytes = 32_768
    public var maxHeaderCount = 100
    /// Restores the path a sender called when a proxy rewrites it (signatures over the path).
    public var publicPathPrefix = ""
    public init() {}
}

public struct APISettings: Sendable {
    /// The credentials of the merchant APIs; none configured refuses every call.
    public var tokens: [APIToken] = []
    /// The operator credentials among them: the console is served when there is one.
    public var operators: [APIToken] { tokens.filter { $0.kind == .operator } }
    /// Per app: the P-256 public key (PEM file) of the merchant's backend, which signs the short-lived
    /// user tokens (ES256 JWT, `sub` the user, `aud` the app) that a client credential acts for a user with.
    public var userTokenKeys: [String: String] = [:]
    /// Requests each credential may make per second on the merchant routes, and the burst above it,
    /// unless the credential sets its own: one client credential serves every install of its app.
    public var ratePerSecond = 500
    public var rateBurst = 1_000
    /// Per client credential (and validator key): the requests that call a store's API (a receipt, a
    /// Play token), so the public credential cannot spend the merchant's App Store and Play quotas.
    public var clientStoreCallsPerSecond = 50
    public var clientStoreCallBurst = 200
    /// The port of the workers' own HTTP server in `tollgate work` (health, readiness, metrics, the
    /// entitlement API). `tollgate dev` serves the API on the gateway's port instead.
    public var port = 8081
    public init() {}
}

/// One credential of the merchant APIs (docs/security.md). A *server* credential is the merchant's
/// backend: it acts for any user of its apps. A *client* credential is embedded in an app, so public
/// by assumption: it posts purchases only with a proof of possession and acts only for the user a
/// user token names. An *operator* credential signs a person in to the operator console (docs/console.md):
/// it answers no merchant API, and takes actions only when `actions` says so.
/// `apps` nil answers for every app (the plain form, `- <token>`, a server credential).
public struct APIToken: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, CaseIterable { case server, client, `operator` }

    public var token: String
    public var kind: Kind
    public var apps: Set<String>?
    /// May ask for refunds (`POST /v1/checkouts/{id}/refund`): money leaves the merchant, so only a
    /// server credential configured `refunds: true` may.
    public var refunds: Bool
    /// This credential's own rate and burst (`api.ratePerSecond`, `api.rateBurst` when nil).
    public var ratePerSecond: Int?
    public var rateBurst: Int?
    /// An operator's name: who the console's audit names for what this credential did.
    public var name: String?
    /// An operator credential that may act (replay, re-verify, refresh, endpoints), not only read.
    public var actions: Bool

    public init(_ token: String, kind: Kind = .server, apps: Set<String>? = nil, refunds: Bool = false,
                ratePerSecond: Int? = nil, rateBurst: Int? = nil, name: String? = nil, actions: Bool = false) {
        self.token = token
        self.kind = kind
        self.apps = apps
        self.refunds = refunds
        self.ratePerSecond = ratePerSecond
        self.rateBurst = rateBurst
        self.name = name
        self.actions = actions
    }

    public func allows(app: String) -> Bool { apps?.contains(app) ?? true }
}

public struct KafkaSettings: Sendable {
    /// Nil means the embedded broker (development only).
    public var brokers: String?
    public var topicPrefix = "tollgate"
    /// How long a request waits for Kafka's acknowledgement before its delivery is spooled.
    public var ackTimeoutMs = 2_000
    public var consumerGroup = "tollgate-workers"
    public var partitions = 6
    public var replicationFactor = 3
    public var retryDelaysMs = [5_000, 60_000, 600_000]
    /// librdkafka properties passed through unchanged (security.protocol, sasl.*, ssl.*).
    public var properties: [String: String] = [:]
    /// Properties that guarantee durability; `properties` may not set them.
    public static let managedProperties: Set<String> = ["enable.idempotence", "acks", "request.required.acks",
                                                        "message.timeout.ms", "delivery.timeout.ms", "bootstrap.servers",
                                                        "group.id", "enable.auto.commit", "enable.auto.offset.store"]
    public init() {}
}

/// Where `/metrics` is served: beside the public routes (no port), or on a listener of its own, which
/// the deployment keeps off the public network (only Prometheus reaches it).
public struct MetricsSettings: Sendable {
    /// The port of the process's own `/metrics` listener (the gateway's in `serve`, the workers' in
    /// `work`, the one process's in `dev`); nil serves `/metrics` on `http.port` / `api.port` as before.
    public var port: Int?
    /// The address it binds; nil means `http.host`.
    public var host: String?
    public init() {}
}

public struct StoreSettings: Sendable {
    public var url = "sqlite:./.tollgate/tollgate.sqlite"
    public init() {}
}

public struct LogSettings: Sendable {
    public enum Format: String, Sendable { case json, text }
    public var level = "info"
    public var format = Format.text
    public init() {}
}

/// Each sender's settings, keyed by sender name. Config knows no sender: each sender's folder reads
/// its own section `sources.<name>` (a `SenderConfigSection`) and reads its value back with its own
/// typed accessor (e.g. `sources.apple` in Sources/Verifiers/Apple).
public struct SourcesSettings: Sendable {
    /// The senders this configuration was read for, in catalog order.
    public private(set) var names: [SourceName] = []
    private var values: [SourceName: any Sendable] = [:]

    public init() {}

    /// The settings of `name`, or nil when that sender was not part of the read.
    public func settings<T: Sendable>(_ name: SourceName, as type: T.Type = T.self) -> T? {
        values[name] as? T
    }

    public mutating func set<T: Sendable>(_ value: T, for name: SourceName) {
        if values.updateValue(value, forKey: name) == nil, !names.contains(name) { names.append(name) }
    }
}

/// How one sender's section `sources.<name>` is read: the sender's folder supplies it, the loader calls it.
public struct SenderConfigSection: Sendable {
    public let name: SourceName
    public let read: @Sendable (ConfigReader) throws(ConfigError) -> any Sendable

    public init(name: SourceName, read: @escaping @Sendable (ConfigReader) throws(ConfigError) -> any Sendable) {
        self.name = name
        self.read = read
    }
}

extension TollgateConfig {
    /// Every topic name, with a raw topic for each sender the configuration was read for.
    public var topicNames: TopicNames {
        TopicNames(prefix: kafka.topicPrefix, retryDelaysMs: kafka.retryDelaysMs, sources: sources.names)
    }
}

/// How long each sender may go without an authentic delivery before `TollgateSenderSilent` fires
/// (deploy/alerts.yaml): `silence.<sender>` in seconds. A sender without an entry is not watched.
public struct SilenceSettings: Sendable {
    public var afterSeconds: [SourceName: Int] = [:]
    public init() {}
}
