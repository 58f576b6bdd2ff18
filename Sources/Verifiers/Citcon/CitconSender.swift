import Config
import Events
import Toolkit

extension SourceName {
    public static let citcon = SourceName("citcon")
}

/// Citcon IPNs, UPI and legacy CHOP (docs/senders/citcon.md).
public enum CitconSender: SenderDefinition {
    public static let name = SourceName.citcon

    /// `/webhooks/citcon/<account>` checks that account's secrets only.
    public static let routesAccounts = true

    /// Account names become a path segment (`/webhooks/citcon/<name>`) and part of `ce_source`.
    private static let accountNameCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".unicodeScalars)

    public static func readSettings(_ c: ConfigReader) throws(ConfigError) -> CitconSettings {
        var citcon = CitconSettings()
        citcon.accounts = try c.list("accounts") { (a) throws(ConfigError) in
            let name = try a.requiredString("name")
            guard name.unicodeScalars.allSatisfy(accountNameCharacters.contains), name != ".", name != ".." else {
                throw ConfigError(key: a.name("name"), message: "use ASCII letters, digits, '.', '_' or '-' (it is a URL path segment), got \"\(name)\"")
            }
            let account = CitconSettings.Account(name: name, secrets: try a.strings("secrets"), tokens: try a.strings("tokens"),
                                                 environment: try a.environment())
            if account.secrets.isEmpty, account.tokens.isEmpty {
                throw ConfigError(key: a.name("secrets"), message: "account \(name) needs at least one UPI secret or one CHOP token")
            }
            if account.secrets.contains(where: \.isEmpty) { throw ConfigError(key: a.name("secrets"), message: "a secret is empty") }
            if account.tokens.contains(where: \.isEmpty) { throw ConfigError(key: a.name("tokens"), message: "a token is empty") }
            return account
        }
        try c.requireDistinct(citcon.accounts.map { ($0.name, $0.secrets + $0.tokens) }, key: "accounts", what: "account")
        return citcon
    }

    public static func makeSource(_ settings: CitconSettings, fetcher: (any HTTPFetcher)?) throws(ConfigError) -> any WebhookSource {
        CitconSource(settings: settings)
    }
}

extension SourcesSettings {
    public var citcon: CitconSettings {
        get { settings(.citcon) ?? CitconSettings() }
        set { set(newValue, for: .citcon) }
    }
}

public struct CitconSettings: Sendable {
    public struct Account: Sendable {
        /// Names the account in `ce_source` (`/citcon/<name>`) and in its own route `/webhooks/citcon/<name>`.
        public var name: String
        /// UPI IPN secrets (SHA-256 signatures); several for rotation.
        public var secrets: [String]
        /// Legacy CHOP API tokens (MD5 signatures); several for rotation.
        public var tokens: [String]
        /// Citcon's IPNs do not say whether they come from its sandbox: the account does.
        public var environment: NormalizedEvent.Environment
        public init(name: String, secrets: [String] = [], tokens: [String] = [], environment: NormalizedEvent.Environment = .production) {
            self.name = name
            self.secrets = secrets
            self.tokens = tokens
            self.environment = environment
        }
    }
    public var accounts: [Account] = []
    public init() {}
}
