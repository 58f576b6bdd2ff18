import Events
import Toolkit

/// One Alipay+ / Antom client (`sources.alipayplus.clients[]`), read once for everything that speaks
/// for it: the platform public keys that verify Antom's notifications and answers, and the merchant
/// private key, when configured, that signs Tollgate's answers to notifications and its calls of
/// Antom's API (`pay`, `refund`). The Alipay+ sender reads it from the configuration (key files checked
/// then); the checkouts use the same values. Keys and their paths are never logged.
public struct AntomAccount: Sendable {
    public struct PlatformKey: Sendable {
        public let key: PublicKey
        /// Nil: tried whatever `keyVersion` a request names.
        public let keyVersion: Int?

        public init(key: PublicKey, keyVersion: Int?) {
            self.key = key
            self.keyVersion = keyVersion
        }
    }

    public let clientId: String
    public let platformKeys: [PlatformKey]
    /// Nil: the client answers notifications unsigned and cannot call Antom's API.
    public let merchantKey: PrivateKey?
    public let merchantKeyVersion: Int?
    /// As configured (`environment`).
    public let environment: NormalizedEvent.Environment

    public init(clientId: String, platformKeys: [PlatformKey], merchantKey: PrivateKey? = nil, merchantKeyVersion: Int? = nil,
                environment: NormalizedEvent.Environment = .production) {
        self.clientId = clientId
        self.platformKeys = platformKeys
        self.merchantKey = merchantKey
        self.merchantKeyVersion = merchantKeyVersion
        self.environment = environment
    }

    /// The environment of the client's events: sandbox when configured so or when Antom's client id says
    /// so (`SANDBOX_...`), else production.
    public var eventEnvironment: NormalizedEvent.Environment {
        environment == .sandbox || clientId.hasPrefix("SANDBOX_") ? .sandbox : .production
    }
}
