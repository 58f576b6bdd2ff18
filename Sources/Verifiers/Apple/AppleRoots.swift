import Config
import Foundation
import Toolkit

/// Loads the configured Apple roots, refusing a file that claims to be Apple Root CA - G3 but is not.
enum AppleRoots {
    static let g3CommonName = "Apple Root CA - G3"
    /// SHA-256 of Apple Root CA - G3, as published on Apple's certificate authority page.
    static let g3Fingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"

    static func load(paths: [String]) throws(ConfigError) -> [Certificate] {
        var roots: [Certificate] = []
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError(key: "sources.apple.roots", message: "cannot read \(path) (get Apple Root CA - G3 from https://www.apple.com/certificateauthority/)")
            }
            guard let certificate = Certificate.load(pemOrDER: Array(data)) else {
                throw ConfigError(key: "sources.apple.roots", message: "\(path) is not a PEM or DER certificate")
            }
            if certificate.commonName == g3CommonName, Digest.hex(certificate.sha256Fingerprint) != g3Fingerprint {
                throw ConfigError(key: "sources.apple.roots", message: "\(path) is named \(g3CommonName) but its SHA-256 fingerprint is not Apple's")
            }
            roots.append(certificate)
        }
        return roots
    }
}
