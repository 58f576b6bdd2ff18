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
        let roots = try a.paths("roots")
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
            var settings = AppleSettings.App(bundleId: try app.requiredString("bundleId"),
                                             appAppleId: appAppleId, environments: environments)
            settings.serverAPI = try app.section("serverApi") { (s) throws(ConfigError) in
                let issuerId = try s.string("issuerId"), keyId = try s.string("keyId"), keyFile = try s.string("privateKeyFile")
                guard let issuerId, let keyId, let keyFile else {
                    if issuerId == nil, keyId == nil, keyFile == nil { return nil }
                    throw ConfigError(key: s.name("issuerId"), message: "issuerId, keyId and privateKeyFile are given together")
                }
                for (name, value) in [("issuerId", issuerId), ("keyId", keyId), ("privateKeyFile", keyFile)] where value.isEmpty {
                    throw ConfigError(key: s.name(name), message: "is empty")
                }
                return AppleSettings.App.ServerAPIKey(issuerId: issuerId, keyId: keyId, privateKeyFile: s.resolvePath(keyFile, key: "privateKeyFile"))
            }
            settings.consumption = try app.section("consumption") { (c) throws(ConfigError) in
                try readConsumptionPolicy(c, hasServerAPIKey: settings.serverAPI != nil)
            }
            settings.setAppAccountToken = try app.bool("setAppAccountToken", default: false)
            if settings.setAppAccountToken, settings.serverAPI == nil {
                throw ConfigError(key: app.name("setAppAccountToken"), message: "needs the app's serverApi key, which signs the calls")
            }
            return settings
        }
        // Named apart from `apps[].serverApi` (an app's key): where the App Store Server API is reached.
        apple.serverAPI = try a.section("serverApiEndpoints") { (s) throws(ConfigError) in
            var api = AppleSettings.ServerAPI()
            api.productionURL = try s.credentialedURL("productionURL", default: api.productionURL)
            api.sandboxURL = try s.credentialedURL("sandboxURL", default: api.sandboxURL)
            api.timeoutMs = try s.int("timeoutMs", default: api.timeoutMs, range: 100...120_000)
            return api
        }
        return apple
    }

    /// `sources.apple.apps[].consumption`: how the workers answer Apple's consumption requests for the app.
    static func readConsumptionPolicy(_ c: ConfigReader, hasServerAPIKey: Bool) throws(ConfigError) -> AppleSettings.App.ConsumptionPolicy {
        var policy = AppleSettings.App.ConsumptionPolicy()
        policy.enabled = try c.bool("enabled", default: false)
        policy.customerConsented = try c.bool("customerConsented", default: false)
        policy.sampleContentProvided = try c.bool("sampleContentProvided", default: false)
        if let preference = try c.string("refundPreference"), !preference.isEmpty {
            guard let known = AppleSettings.App.ConsumptionPolicy.RefundPreference(rawValue: preference) else {
                let allowed = AppleSettings.App.ConsumptionPolicy.RefundPreference.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigError(key: c.name("refundPreference"), message: "expected one of \(allowed), got \"\(preference)\"")
            }
            policy.refundPreference = known
        }
        guard policy.enabled else { return policy }
        // Apple refuses (400) every answer whose customerConsented is not true: an enabled policy
        // without consent could only fail, so it is refused here rather than on each request.
        guard policy.customerConsented else {
            throw ConfigError(key: c.name("customerConsented"), message: "must be true when consumption answers are enabled (Apple refuses answers without consent)")
        }
        guard hasServerAPIKey else {
            throw ConfigError(key: c.name("enabled"), message: "needs the app's serverApi key, which signs the answers")
        }
        return policy
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
        /// The app's In-App Purchase key for the App Store Server API (App Store Connect, Users and
        /// Access, Integrations): the workers call the API with it.
        public struct ServerAPIKey: Sendable {
            public var issuerId: String
            public var keyId: String
            /// The `.p8` file; read at start-up, never logged.
            public var privateKeyFile: String
            public init(issuerId: String, keyId: String, privateKeyFile: String) {
                self.issuerId = issuerId
                self.keyId = keyId
                self.privateKeyFile = privateKeyFile
            }
        }
        public var bundleId: String
        public var appAppleId: Int64?
        public var environments: [String]
        public var serverAPI: ServerAPIKey?
        /// How the workers answer Apple's consumption requests (`CONSUMPTION_REQUEST`) for this app.
        public struct ConsumptionPolicy: Sendable, Equatable {
            /// Apple's `refundPreference` values (ConsumptionRequest).
            public enum RefundPreference: String, Sendable, CaseIterable {
                case decline = "DECLINE", grantFull = "GRANT_FULL", grantProrated = "GRANT_PRORATED"
            }
            /// Off by default: nothing about a customer is sent to Apple unless the merchant says so.
            public var enabled = false
            /// The merchant's word that its customers consented to sharing consumption data with Apple.
            public var customerConsented = false
            /// Whether the app offers a free sample, trial or description of the content before purchase.
            public var sampleContentProvided = false
            /// Left out of the answer when nil: Apple then decides without the merchant's preference.
            public var refundPreference: RefundPreference?
            public init() {}
        }
        public var consumption = ConsumptionPolicy()
        /// Whether Tollgate sets the purchase's `appAccountToken` at Apple once a purchase is linked to a user
        /// (Set App Account Token), so Apple's later notifications name its owner. Off by default.
        public var setAppAccountToken = false
        public init(bundleId: String, appAppleId: Int64?, environments: [String]) {
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environments = environments
        }
    }
    /// Where the App Store Server API is, and how long one request may take.
    public struct ServerAPI: Sendable {
        public var productionURL = "https://api.storekit.apple.com"
        public var sandboxURL = "https://api.storekit-sandbox.apple.com"
        public var timeoutMs = 10_000
    }
    /// Where operators install Apple Root CA - G3 (docs/senders/apple.md); the container image puts it here.
    public static let defaultRoot = "/etc/tollgate/apple/AppleRootCA-G3.cer"
    public var roots: [String] = [defaultRoot]
    public var apps: [App] = []
    public var serverAPI = ServerAPI()
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
