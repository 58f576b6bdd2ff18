import Events
import Toolkit

/// One Alipay+ / Antom client (`sources.alipayplus.clients[]`), read once for everything that speaks
/// for it: the platform public keys that verify Antom's notifications and answers, and the merchant
/// private key, when configured, that signs Tollgate's answers to notifications and its calls of
/// Antom's API (`pay`, `refund`). One type, read from `sources.alipayplus.clients[]` by one piece of code
/// (`AlipayPlusSource.antomAccounts`, key files checked then) for the sender and for the checkouts, so
/// both check and sign with the same keys. Keys and their paths are never logged.
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

    /// The platform keys a signature's `keyVersion` selects: those bound to it plus the unbound ones, or
    /// all of them when it names none. Empty when it names a version no key is configured for.
    public func platformKeys(for keyVersion: Int?) -> [PublicKey] {
        platformKeys.filter { keyVersion == nil || $0.keyVersion == nil || $0.keyVersion == keyVersion }.map(\.key)
    }

    /// The environment of the client's events: sandbox when configured so or when Antom's client id says
    /// so (`SANDBOX_...`), else production.
    public var eventEnvironment: NormalizedEvent.Environment {
        environment == .sandbox || clientId.hasPrefix("SANDBOX_") ? .sandbox : .production
    }
}
