import Foundation
import Toolkit

/// What one app presents to the App Store Server API: the In-App Purchase key downloaded from App
/// Store Connect (a `.p8`, PKCS#8 P-256), its key id, the team's issuer id, and the app's bundle id.
/// Its description names the key id and bundle, never the key.
public struct AppStoreAPICredentials: Sendable, CustomStringConvertible {
    public let issuerId: String
    public let keyId: String
    public let bundleId: String
    let privateKey: PrivateKey

    public init(issuerId: String, keyId: String, bundleId: String, privateKey: PrivateKey) throws(AppStoreCredentialsError) {
        guard !issuerId.isEmpty else { throw AppStoreCredentialsError("the issuer id is empty") }
        guard !keyId.isEmpty else { throw AppStoreCredentialsError("the key id is empty") }
        guard privateKey.isP256 else {
            throw AppStoreCredentialsError("the key is not a P-256 EC key (App Store Connect's In-App Purchase keys sign ES256)")
        }
        self.issuerId = issuerId
        self.keyId = keyId
        self.bundleId = bundleId
        self.privateKey = privateKey
    }

    /// Reads the `.p8` at `path`.
    public static func load(issuerId: String, keyId: String, bundleId: String, path: String) throws(AppStoreCredentialsError) -> AppStoreAPICredentials {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AppStoreCredentialsError("\(path): cannot read the key file")
        }
        guard let key = PrivateKey.load(pemOrDER: [UInt8](data)) else {
            throw AppStoreCredentialsError("\(path): not a PEM, DER or base64 PKCS#8 private key")
        }
        do {
            return try AppStoreAPICredentials(issuerId: issuerId, keyId: keyId, bundleId: bundleId, privateKey: key)
        } catch {
            throw AppStoreCredentialsError("\(path): \(error.message)")
        }
    }

    public var description: String { "App Store Server API key \(keyId) for \(bundleId)" }
}

/// Why credentials cannot be used; says what is wrong, never what the key is.
public struct AppStoreCredentialsError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
