import Config
import Events
import Foundation
import Toolkit

/// One configured Sileo vendor, ready to serve: its settings, the sign-in page's public key and the
/// secret that signs redirects to `downloadURL`s, read at start so a missing or wrong key (or a
/// missing package file) stops the process with its path.
public struct SileoVendor: Sendable {
    public let settings: SileoSettings.Vendor
    let assertionKey: PublicKey
    /// Signs the redirects to `packages[].downloadURL`; nil when no package has one.
    let downloadSignature: SileoDownloadSignature?

    public struct SetupError: Error, CustomStringConvertible {
        public let description: String
    }

    init(settings: SileoSettings.Vendor, assertionKey: PublicKey, downloadSignature: SileoDownloadSignature?) {
        self.settings = settings
        self.assertionKey = assertionKey
        self.downloadSignature = downloadSignature
    }

    /// Reads `signIn.assertionKeyFile` (a P-256 public key, PEM or DER, or a certificate holding one) and
    /// `downloadURLSecretFile`, and checks that every package's `file` exists under `downloadDirectory`
    /// and that `provider` is one of `providers` (`CheckoutProviderCatalog`). With `checkouts` (the
    /// workers' own), `app` must be an account of the provider that can take checkouts, in the vendor's
    /// `environment`: a payment kept in another environment than the one the Sileo API reads would be
    /// taken and never delivered, and bought again.
    /// The secret's path is named in errors, never its contents.
    public static func load(_ settings: SileoSettings.Vendor, checkouts: CheckoutSetup? = nil) throws(SetupError) -> SileoVendor {
        let providers = CheckoutProviderCatalog.standard.names
        let vendor = "sileo vendor \(settings.basePath)"
        guard providers.contains(SourceName(settings.provider)) else {
            throw SetupError(description: "\(vendor): provider \"\(settings.provider)\" is not a checkout provider (\(providers.map(\.rawValue).joined(separator: ", ")))")
        }
        if let checkouts {
            let environment: NormalizedEvent.Environment
            do { environment = try checkouts.environment(provider: settings.provider, account: settings.app) } catch {
                throw SetupError(description: "\(vendor): app \"\(settings.app)\" cannot take \(settings.provider) checkouts: \(error.message). "
                                 + "Set sileo.vendors[].app to the provider account its payments are made under (docs/sileo.md)")
            }
            guard environment == settings.environment else {
                throw SetupError(description: "\(vendor): environment is \(settings.environment.rawValue) but \(settings.provider) account \(settings.app) "
                                 + "pays in \(environment.rawValue), so a purchase would be paid and never delivered. "
                                 + "Set sileo.vendors[].environment: \(environment.rawValue)")
            }
        }
        let keyPath = settings.signIn.assertionKeyFile
        guard let data = FileManager.default.contents(atPath: keyPath) else {
            throw SetupError(description: "sileo vendor \(settings.basePath): cannot read signIn.assertionKeyFile \(keyPath)")
        }
        guard let key = PublicKey.load(pemOrDER: [UInt8](data)), key.isP256 else {
            throw SetupError(description: "sileo vendor \(settings.basePath): signIn.assertionKeyFile \(keyPath) is not a P-256 public key (ES256)")
        }
        for package in settings.packages {
            guard let path = filePath(of: package, in: settings) else { continue }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                throw SetupError(description: "sileo vendor \(settings.basePath): package \(package.id) file \(path) does not exist")
            }
        }
        var downloadSignature: SileoDownloadSignature?
        if let secretPath = settings.downloadURLSecretFile {
            guard let data = FileManager.default.contents(atPath: secretPath) else {
                throw SetupError(description: "sileo vendor \(settings.basePath): cannot read downloadURLSecretFile \(secretPath)")
            }
            guard let secret = SileoDownloadSignature.secret(fromFile: [UInt8](data)) else {
                throw SetupError(description: "sileo vendor \(settings.basePath): downloadURLSecretFile \(secretPath) holds fewer than \(SileoDownloadSignature.minimumSecretBytes) bytes")
            }
            downloadSignature = SileoDownloadSignature(secret: secret)
        }
        return SileoVendor(settings: settings, assertionKey: key, downloadSignature: downloadSignature)
    }

    /// Where a package's file is, when it is served from the directory.
    static func filePath(of package: SileoSettings.Package, in settings: SileoSettings.Vendor) -> String? {
        guard let file = package.file, let directory = settings.downloadDirectory else { return nil }
        return directory.hasSuffix("/") ? directory + file : directory + "/" + file
    }

    func package(_ id: String) -> SileoSettings.Package? { settings.packages.first { $0.id == id } }
}
