import Config
import Events
import Toolkit

extension SourceName {
    public static let alipayplus = SourceName("alipayplus")
}

/// Alipay+ / Antom notifyPayment (docs/senders/alipayplus.md).
public enum AlipayPlusSender: SenderDefinition {
    public static let name = SourceName.alipayplus

    /// The signature covers `Client-Id` and `Request-Time`: `tollgate replay` needs all three.
    public static let keptRequestHeaders = ["client-id", "request-time", "signature"]

    public static func readSettings(_ a: ConfigReader) throws(ConfigError) -> AlipayPlusSettings {
        var alipay = AlipayPlusSettings()
        alipay.clients = try a.list("clients") { (c) throws(ConfigError) in
            let clientId = try c.requiredString("clientId")
            let keys = try c.list("platformPublicKeys", scalar: { (path, itemName) throws(ConfigError) in
                guard !path.isEmpty else { throw ConfigError(key: itemName, message: "is an empty path") }
                return AlipayPlusSettings.PlatformKey(path: c.resolvePath(path, key: "platformPublicKeys"))
            }, mapping: { (k) throws(ConfigError) in
                AlipayPlusSettings.PlatformKey(path: try k.requiredPath("path"),
                                               keyVersion: try keyVersion(k, "keyVersion"))
            })
            if keys.isEmpty {
                throw ConfigError(key: c.name("platformPublicKeys"), message: "client \(clientId) needs at least one platform public key")
            }
            let merchantPrivateKey = try c.path("merchantPrivateKey")
            let merchantKeyVersion = try keyVersion(c, "merchantKeyVersion")
            if merchantKeyVersion != nil, merchantPrivateKey == nil {
                throw ConfigError(key: c.name("merchantKeyVersion"), message: "is only meaningful with merchantPrivateKey")
            }
            return AlipayPlusSettings.Client(clientId: clientId, platformPublicKeys: keys,
                                             merchantPrivateKey: merchantPrivateKey, merchantKeyVersion: merchantKeyVersion,
                                             environment: try c.environment())
        }
        var seen = Set<String>()
        for client in alipay.clients where !seen.insert(client.clientId).inserted {
            throw ConfigError(key: a.name("clients"), message: "client \(client.clientId) is configured twice")
        }
        alipay.maxRequestAgeSeconds = try a.int("maxRequestAgeSeconds", default: alipay.maxRequestAgeSeconds, range: 0...604_800)
        alipay.maxRequestClockSkewSeconds = try a.int("maxRequestClockSkewSeconds", default: alipay.maxRequestClockSkewSeconds,
                                                      range: 0...3_600)
        return alipay
    }

    private static func keyVersion(_ reader: ConfigReader, _ key: String) throws(ConfigError) -> Int? {
        guard let version = try reader.optionalInt(key) else { return nil }
        guard version >= 0 else { throw ConfigError(key: reader.name(key), message: "must not be negative, got \(version)") }
        return version
    }

    public static func makeSource(_ settings: AlipayPlusSettings, fetcher: (any HTTPFetcher)?) throws(ConfigError) -> any WebhookSource {
        try AlipayPlusSource(settings: settings)
    }
}

extension SourcesSettings {
    public var alipayplus: AlipayPlusSettings {
        get { settings(.alipayplus) ?? AlipayPlusSettings() }
        set { set(newValue, for: .alipayplus) }
    }
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
        /// `sandbox`: the client's events are sandbox ones (as are those of a `SANDBOX_` client id).
        public var environment: NormalizedEvent.Environment
        public init(clientId: String, platformPublicKeys: [PlatformKey], merchantPrivateKey: String? = nil,
                    merchantKeyVersion: Int? = nil, environment: NormalizedEvent.Environment = .production) {
            self.clientId = clientId
            self.platformPublicKeys = platformPublicKeys
            self.merchantPrivateKey = merchantPrivateKey
            self.merchantKeyVersion = merchantKeyVersion
            self.environment = environment
        }
    }
    public var clients: [Client] = []
    /// How old a delivery's signed `Request-Time` may be when it arrives; 0 turns the check off. The
    /// default covers Alipay+'s retry schedule (up to 8 notifications within about 25 hours), in case a
    /// retry carries its first attempt's time (docs/senders/alipayplus.md).
    public var maxRequestAgeSeconds = 90_000
    /// How far ahead of the gateway's clock a `Request-Time` may be (the sender's clock running fast).
    public var maxRequestClockSkewSeconds = 300
    public init() {}
}
