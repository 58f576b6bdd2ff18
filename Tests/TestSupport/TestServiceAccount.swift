import Foundation
import Toolkit

/// Service-account keys for the tests, as Google's console writes them: RSA keys generated once per
/// run (off the pool: key generation is CPU-bound) and JSON key files in a temporary directory.
public enum TestServiceAccount {
    public static let email = "tollgate-play@tollgate-test.iam.gserviceaccount.com"
    public static let keyId = "7d1b4c0e2f9a3c5d8e6f0a1b2c3d4e5f6a7b8c9d"

    /// The key the fake Google knows.
    public static let key = Task { try await generate() }
    /// A key it does not know.
    public static let otherKey = Task { try await generate() }

    private static func generate() async throws -> PrivateKey {
        try await offPool {
            guard let key = PrivateKey.generateRSA() else { throw CocoaError(.featureUnsupported) }
            return key
        }
    }

    /// The JSON of a key file, with every field Google puts in one.
    public static func json(key: PrivateKey, email: String = email, keyId: String = keyId) throws -> String {
        guard let pem = key.pem else { throw CocoaError(.featureUnsupported) }
        let file: [String: String] = [
            "type": "service_account",
            "project_id": "tollgate-test",
            "private_key_id": keyId,
            "private_key": pem,
            "client_email": email,
            "client_id": "104742583123456789012",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/tollgate-play%40tollgate-test.iam.gserviceaccount.com",
            "universe_domain": "googleapis.com",
        ]
        let data = try JSONSerialization.data(withJSONObject: file, options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    /// Writes `contents` as a key file in a new temporary directory; returns its path.
    public static func write(_ contents: String) async throws -> String {
        try await offPool {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-play-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("service-account.json")
            try Data(contents.utf8).write(to: file)
            return file.path
        }
    }

    /// Removes the directory `write` made.
    public static func remove(_ path: String) async {
        _ = try? await offPool { try FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    }
}
