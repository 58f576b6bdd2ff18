import Config
import Events
import Foundation
import ProviderAPIs
import Rejections
import Toolkit

/// One configured client: its platform public keys (loaded and checked at start-up) and, when
/// configured, the merchant private key that signs responses.
struct AlipayPlusClient: Sendable {
    struct PlatformKey: Sendable {
        let key: PublicKey
        /// Nil: tried whatever `keyVersion` a request names.
        let keyVersion: Int?
    }

    let clientId: String
    let platformKeys: [PlatformKey]
    let merchantKey: PrivateKey?
    let merchantKeyVersion: Int?
    let environment: NormalizedEvent.Environment

    init(clientId: String, platformKeys: [PlatformKey], merchantKey: PrivateKey? = nil, merchantKeyVersion: Int? = nil,
         environment: NormalizedEvent.Environment = .production) {
        self.clientId = clientId
        self.environment = environment
        self.platformKeys = platformKeys
        self.merchantKey = merchantKey
        self.merchantKeyVersion = merchantKeyVersion
    }

    /// Reads every key file; an unreadable file, a key that is not RSA or is under 2048 bits stops start-up.
    init(settings: AlipayPlusSettings.Client, index: Int) throws(ConfigError) {
        let prefix = "sources.alipayplus.clients[\(index)]"
        var keys: [PlatformKey] = []
        for (keyIndex, configured) in settings.platformPublicKeys.enumerated() {
            let name = "\(prefix).platformPublicKeys[\(keyIndex)]"
            guard let data = FileManager.default.contents(atPath: configured.path) else {
                throw ConfigError(key: name, message: "cannot read \(configured.path)")
            }
            guard let key = PublicKey.load(pemOrDER: Array(data)) else {
                throw ConfigError(key: name, message: "\(configured.path) is not a public key (PEM PUBLIC KEY, RSA PUBLIC KEY, CERTIFICATE, DER, or Antom's base64)")
            }
            guard key.isRSA, key.bits >= PublicKey.minimumRSABits else {
                throw ConfigError(key: name, message: "\(configured.path) must be an RSA key of at least \(PublicKey.minimumRSABits) bits")
            }
            keys.append(PlatformKey(key: key, keyVersion: configured.keyVersion))
        }
        var merchantKey: PrivateKey?
        if let path = settings.merchantPrivateKey {
            let name = "\(prefix).merchantPrivateKey"
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError(key: name, message: "cannot read \(path)")
            }
            guard let key = PrivateKey.load(pemOrDER: Array(data)) else {
                throw ConfigError(key: name, message: "\(path) is not a private key (PEM, DER, or Antom's base64 PKCS#8)")
            }
            guard key.isRSA, key.bits >= PublicKey.minimumRSABits, key.signRSASHA256(Array("probe".utf8)) != nil else {
                throw ConfigError(key: name, message: "\(path) must be an RSA key of at least \(PublicKey.minimumRSABits) bits that can sign")
            }
            merchantKey = key
        }
        self.init(clientId: settings.clientId, platformKeys: keys, merchantKey: merchantKey,
                  merchantKeyVersion: settings.merchantKeyVersion, environment: settings.environment)
    }

    /// The keys a request's `keyVersion` selects: those bound to it plus the unbound ones.
    func keys(for keyVersion: Int?) throws(Rejection) -> [PublicKey] {
        guard let keyVersion else { return platformKeys.map(\.key) }
        let selected = platformKeys.filter { $0.keyVersion == nil || $0.keyVersion == keyVersion }
        guard !selected.isEmpty else {
            throw Rejection(.unknownKeyVersion, "keyVersion \(keyVersion) names no platform key configured for this Client-Id")
        }
        return selected.map(\.key)
    }
}

extension AlipayPlusSource {
    /// The configured clients with a merchant key as Antom's API client signs for them: the keys read and
    /// checked once, as the sender reads them (RSA of at least 2048 bits, a merchant key that signs), so a
    /// checkout's calls and the notifications' answers use one client configuration.
    public static func antomMerchants(_ settings: AlipayPlusSettings) throws(ConfigError) -> [String: AntomMerchant] {
        var merchants: [String: AntomMerchant] = [:]
        for (index, configured) in settings.clients.enumerated() {
            let client = try AlipayPlusClient(settings: configured, index: index)
            guard let merchantKey = client.merchantKey else { continue }
            merchants[client.clientId] = AntomMerchant(clientId: client.clientId, merchantKey: merchantKey,
                                                       merchantKeyVersion: client.merchantKeyVersion, platformKeys: client.platformKeys.map(\.key))
        }
        return merchants
    }
}
