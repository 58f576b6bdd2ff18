/// The whole configuration (DESIGN.md section 5). Defaults give a working `tollgate dev`.
public struct TollgateConfig: Sendable {
    public var http = HTTPSettings()
    public var api = APISettings()
    public var kafka = KafkaSettings()
    public var store = StoreSettings()
    public var log = LogSettings()
    public var sources = SourcesSettings()
    public var spool = SpoolSettings()
    public var dedup = DedupSettings()
    public var shutdown = ShutdownSettings()
    public var limits = LimitSettings()

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
    /// Bearer tokens for the entitlement API; none configured refuses every call.
    public var tokens: [String] = []
    /// The port of the workers' own HTTP server in `tollgate work` (health, readiness, metrics, the
    /// entitlement API). `tollgate dev` serves the API on the gateway's port instead.
    public var port = 8081
    public init() {}
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

public struct SourcesSettings: Sendable {
    public var apple = AppleSettings()
    public var google = GoogleSettings()
    public var citcon = CitconSettings()
    public var iaptic = IapticSettings()
    public var alipayplus = AlipayPlusSettings()
    public init() {}
}

public struct AppleSettings: Sendable {
    public struct App: Sendable {
        public var bundleId: String
        public var appAppleId: Int64?
        public var environments: [String]
        public init(bundleId: String, appAppleId: Int64?, environments: [String]) {
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environments = environments
        }
    }
    /// Where operators install Apple Root CA - G3 (docs/senders/apple.md); the container image puts it here.
    public static let defaultRoot = "/etc/tollgate/apple/AppleRootCA-G3.cer"
    public var roots: [String] = [defaultRoot]
    public var apps: [App] = []
    /// OCSP for leaf and intermediate, validity at "now" instead of signedDate.
    public var onlineChecks = false
    public var ocspTimeoutMs = 5_000
    /// Ask this responder instead of the one each certificate names (AIA), e.g. a caching proxy.
    public var ocspResponder: String?
    /// Verify nested signedTransactionInfo / signedRenewalInfo JWS too (the outer signature covers their bytes).
    public var verifyNested = true
    /// OpenSSL's X509_STRICT checks (Apple's own test chain lacks AKI/SKI, so off by default).
    public var strictX509 = false
    public init() {}
}

public struct GoogleSettings: Sendable {
    public struct PlayAPI: Sendable {
        public var baseURL = "https://androidpublisher.googleapis.com"
        public var tokenURL = "https://oauth2.googleapis.com/token"
        public var credentialsFile: String?
        /// Deadline of one HTTP request to the token endpoint or the API.
        public var timeoutMs = 10_000
    }
    public var audience: String?
    public var serviceAccountEmail: String?
    public var jwks = "https://www.googleapis.com/oauth2/v3/certs"
    public var packages: [String] = []
    public var playApi = PlayAPI()
    public init() {}
}

public struct CitconSettings: Sendable {
    public struct Account: Sendable {
        /// Names the account in `ce_source` (`/citcon/<name>`) and in its own route `/webhooks/citcon/<name>`.
        public var name: String
        /// UPI IPN secrets (SHA-256 signatures); several for rotation.
        public var secrets: [String]
        /// Legacy CHOP API tokens (MD5 signatures); several for rotation.
        public var tokens: [String]
        public init(name: String, secrets: [String] = [], tokens: [String] = []) {
            self.name = name
            self.secrets = secrets
            self.tokens = tokens
        }
    }
    public var accounts: [Account] = []
    public init() {}
}

public struct IapticSettings: Sendable {
    public struct App: Sendable {
        public var name: String
        public var secrets: [String]
        public init(name: String, secrets: [String]) {
            self.name = name
            self.secrets = secrets
        }
    }
    public var apps: [App] = []
    public init() {}
}

public struct AlipayPlusSettings: Sendable {
    /// One platform (Antom / Alipay+) public key file, optionally bound to the `keyVersion` it signs as.
    public struct PlatformKey: Sendable, Equatable {
        public var path: String
        /// Nil: the key is tried whatever `keyVersion` a request names.
        public var keyVersion: Int?
        public init(path: String, keyVersion: Int? = nil) {
            self.path = path
            self.keyVersion = keyVersion
        }
    }

    public struct Client: Sendable {
        public var clientId: String
        public var platformPublicKeys: [PlatformKey]
        /// When set, responses are signed with it (`Client-Id`, `Response-Time`, `Signature` headers).
        public var merchantPrivateKey: String?
        /// The `keyVersion` written in the response `Signature`; omitted when nil.
        public var merchantKeyVersion: Int?
        public init(clientId: String, platformPublicKeys: [PlatformKey], merchantPrivateKey: String? = nil,
                    merchantKeyVersion: Int? = nil) {
            self.clientId = clientId
            self.platformPublicKeys = platformPublicKeys
            self.merchantPrivateKey = merchantPrivateKey
            self.merchantKeyVersion = merchantKeyVersion
        }
    }
    public var clients: [Client] = []
    public init() {}
}
