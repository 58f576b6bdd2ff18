import Config
import Events
import Foundation
import ProviderAPIs
import Rejections
import Toolkit

/// How the Alipay+ sender reads an `AntomAccount` from `sources.alipayplus.clients[]`, and picks its keys.
extension AntomAccount {
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

    /// The keys a request's `keyVersion` selects (`platformKeys(for:)`), or why there are none.
    func keys(for keyVersion: Int?) throws(Rejection) -> [PublicKey] {
        let selected = platformKeys(for: keyVersion)
        guard let keyVersion, selected.isEmpty else { return selected }
        throw Rejection(.unknownKeyVersion, "keyVersion \(keyVersion) names no platform key configured for this Client-Id")
    }
}

extension AlipayPlusSource {
    /// The configured clients as Antom's API client and the checkouts use them: the keys read and
    /// checked once, as the sender reads them (RSA of at least 2048 bits, a merchant key that signs), so a
    /// checkout's calls and the notifications' answers use one client configuration.
    public static func antomAccounts(_ settings: AlipayPlusSettings) throws(ConfigError) -> [String: AntomAccount] {
        var accounts: [String: AntomAccount] = [:]
        for (index, configured) in settings.clients.enumerated() {
            let account = try AntomAccount(settings: configured, index: index)
            accounts[account.clientId] = account
        }
        return accounts
    }
}
