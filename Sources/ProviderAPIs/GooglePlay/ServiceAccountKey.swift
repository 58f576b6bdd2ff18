import Foundation
import Toolkit

/// A Google service-account JSON key, as the Cloud console downloads it: the identity the workers
/// present to the Play Developer API. Its description names the account, never the private key.
public struct ServiceAccountKey: Sendable, CustomStringConvertible {
    public let clientEmail: String
    public let privateKeyId: String
    /// The token endpoint the file names; informational, the configured `tokenURL` is the one used.
    public let tokenURI: String?
    let privateKey: PrivateKey

    /// Reads and checks a key file.
    public static func load(path: String) throws(ServiceAccountKeyError) -> ServiceAccountKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ServiceAccountKeyError("\(path): cannot read the service-account key file")
        }
        do {
            return try ServiceAccountKey(json: [UInt8](data))
        } catch {
            throw ServiceAccountKeyError("\(path): \(error.message)")
        }
    }

    public init(json: [UInt8]) throws(ServiceAccountKeyError) {
        let file: KeyFile
        do {
            file = try JSONDecoder().decode(KeyFile.self, from: Data(json))
        } catch DecodingError.typeMismatch(_, let context) where !context.codingPath.isEmpty {
            // The path names the field; the decoder's own message could quote the value, which may be the key.
            throw ServiceAccountKeyError("\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" is not a string")
        } catch {
            throw ServiceAccountKeyError("not a JSON object (expected a service-account key file)")
        }
        guard file.type == "service_account" else {
            let found = file.type.map { "\"\($0)\"" } ?? "missing"
            throw ServiceAccountKeyError("\"type\" is \(found), expected \"service_account\" (a user or external-account credential cannot call the Play Developer API)")
        }
        guard let email = file.client_email, !email.isEmpty else { throw ServiceAccountKeyError("\"client_email\" is missing") }
        guard let keyId = file.private_key_id, !keyId.isEmpty else { throw ServiceAccountKeyError("\"private_key_id\" is missing") }
        guard let pem = file.private_key, !pem.isEmpty else { throw ServiceAccountKeyError("\"private_key\" is missing") }
        guard let key = PrivateKey(pem: pem) else { throw ServiceAccountKeyError("\"private_key\" is not a PEM private key") }
        guard key.isRSA else { throw ServiceAccountKeyError("\"private_key\" is not an RSA key (Google signs service-account JWTs with RS256)") }
        clientEmail = email
        privateKeyId = keyId
        tokenURI = file.token_uri
        privateKey = key
    }

    public var description: String { "service account \(clientEmail) (key \(privateKeyId))" }

    /// The fields of the file that matter here; the others (project_id, client_id, ...) are ignored.
    private struct KeyFile: Decodable {
        var type: String?
        var client_email: String?
        var private_key_id: String?
        var private_key: String?
        var token_uri: String?
    }
}

/// Why a service-account key file cannot be used; says what is wrong, never what the key is.
public struct ServiceAccountKeyError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
