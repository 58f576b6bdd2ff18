import Config
import Events
import Toolkit

extension SourceName {
    public static let apple = SourceName("apple")
}

/// App Store Server Notifications V2 (docs/senders/apple.md).
public enum AppleSender: SenderDefinition {
    public static let name = SourceName.apple

    public static func readSettings(_ a: ConfigReader) throws(ConfigError) -> AppleSettings {
        var apple = AppleSettings()
        let roots = try a.strings("roots")
        if !roots.isEmpty { apple.roots = roots }
        apple.onlineChecks = try a.bool("onlineChecks", default: false)
        apple.ocspTimeoutMs = try a.int("ocspTimeoutMs", default: apple.ocspTimeoutMs, range: 100...60_000)
        apple.ocspResponder = try a.string("ocspResponder").flatMap { $0.isEmpty ? nil : $0 }
        if let responder = apple.ocspResponder, !(responder.hasPrefix("http://") || responder.hasPrefix("https://")) {
            throw ConfigError(key: a.name("ocspResponder"), message: "expected an http:// or https:// URL")
        }
        apple.verifyNested = try a.bool("verifyNested", default: true)
        apple.strictX509 = try a.bool("strictX509", default: false)
        apple.apps = try a.list("apps") { (app) throws(ConfigError) in
            var environments = try app.strings("environments")
            if environments.isEmpty { environments = ["Production", "Sandbox"] }
            for environment in environments where !["Production", "Sandbox", "Xcode", "LocalTesting"].contains(environment) {
                throw ConfigError(key: app.name("environments"), message: "expected Production, Sandbox, Xcode or LocalTesting, got \"\(environment)\"")
            }
            let appAppleId = try app.optionalInt("appAppleId").map(Int64.init)
            if environments.contains("Production"), appAppleId == nil {
                throw ConfigError(key: app.name("appAppleId"), message: "is required when Production is enabled")
            }
            return AppleSettings.App(bundleId: try app.requiredString("bundleId"),
                                     appAppleId: appAppleId, environments: environments)
        }
        return apple
    }

    public static func makeSource(_ settings: AppleSettings, fetcher: (any HTTPFetcher)?) throws(ConfigError) -> any WebhookSource {
        try AppleSource(settings: settings, fetcher: fetcher)
    }

    /// Offline: certificates valid at `signedDate`, no OCSP.
    public static func offlineSettings(_ settings: AppleSettings) throws(OfflineRefusal) -> AppleSettings {
        var offline = settings
        offline.onlineChecks = false
        return offline
    }
}

extension SourcesSettings {
    public var apple: AppleSettings {
        get { settings(.apple) ?? AppleSettings() }
        set { set(newValue, for: .apple) }
    }
}

public struct AppleSettings: Sendable {
    public struct App: Sendable {
        public var bundleId: String
        public var appAppleId: Int64?
        public var environments: [String]
        public init(bundleId: String, appAppleId: Int64?, environments: [String]) {
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environments = environments
        }
    }
    /// Where operators install Apple Root CA - G3 (docs/senders/apple.md); the container image puts it here.
    public static let defaultRoot = "/etc/tollgate/apple/AppleRootCA-G3.cer"
    public var roots: [String] = [defaultRoot]
    public var apps: [App] = []
    /// OCSP for leaf and intermediate, validity at "now" instead of signedDate.
    public var onlineChecks = false
    public var ocspTimeoutMs = 5_000
    /// Ask this responder instead of the one each certificate names (AIA), e.g. a caching proxy.
    public var ocspResponder: String?
    /// Verify nested signedTransactionInfo / signedRenewalInfo JWS too (the outer signature covers their bytes).
    public var verifyNested = true
    /// OpenSSL's X509_STRICT checks (Apple's own test chain lacks AKI/SKI, so off by default).
    public var strictX509 = false
    public init() {}
}
