import Config
import Events
import Toolkit

extension SourceName {
    public static let iaptic = SourceName("iaptic")
}

/// Iaptic / Fovea purchase callbacks (docs/senders/iaptic.md).
public enum IapticSender: SenderDefinition {
    public static let name = SourceName.iaptic

    public static func readSettings(_ i: ConfigReader) throws(ConfigError) -> IapticSettings {
        var iaptic = IapticSettings()
        iaptic.apps = try i.list("apps") { (a) throws(ConfigError) in
            let app = IapticSettings.App(name: try a.requiredString("name"), secrets: try a.strings("secrets"),
                                         environment: try a.environment())
            if app.secrets.isEmpty || app.secrets.contains(where: \.isEmpty) {
                throw ConfigError(key: a.name("secrets"), message: "needs at least one non-empty secret")
            }
            return app
        }
        try i.requireDistinct(iaptic.apps.map { ($0.name, $0.secrets) }, key: "apps", what: "app")
        return iaptic
    }

    public static func makeSource(_ settings: IapticSettings, fetcher: (any HTTPFetcher)?) throws(ConfigError) -> any WebhookSource {
        IapticSource(settings: settings)
    }

    public static func startupWarnings(_ settings: IapticSettings) -> [StartupWarning] {
        guard settings.apps.isEmpty else { return [] }
        return [StartupWarning(.gateway, key: "sources.iaptic.apps", "no Iaptic apps configured: every Iaptic delivery will be refused")]
    }
}

extension SourcesSettings {
    public var iaptic: IapticSettings {
        get { settings(.iaptic) ?? IapticSettings() }
        set { set(newValue, for: .iaptic) }
    }
}

public struct IapticSettings: Sendable {
    public struct App: Sendable {
        public var name: String
        public var secrets: [String]
        /// `sandbox`: every event of the app is a sandbox one, whatever a purchase's own `sandbox` says.
        public var environment: NormalizedEvent.Environment
        public init(name: String, secrets: [String], environment: NormalizedEvent.Environment = .production) {
            self.name = name
            self.secrets = secrets
            self.environment = environment
        }
    }
    public var apps: [App] = []
    public init() {}
}
