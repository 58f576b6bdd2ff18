import Config
import Events
import Toolkit

/// Everything Tollgate knows about one sender, declared in that sender's folder: its name, how its
/// settings are read from `sources.<name>`, how its `WebhookSource` is built, its routes, what its raw
/// records keep, its start-up warnings and what `tollgate verify`/`replay` change to run offline.
/// `SenderCatalog` lists the definitions; nothing else names a sender (docs/adding-a-sender.md).
public protocol SenderDefinition: Sendable {
    associatedtype Settings: Sendable

    /// Route `/webhooks/<name>`, raw topic `<prefix>.raw.<name>`, section `sources.<name>`, metric label.
    static var name: SourceName { get }

    /// Reads the sender's section `sources.<name>` (an empty reader when the section is absent: the
    /// defaults). Every key it reads is a known key; `TOLLGATE_SOURCES_<NAME>_<KEY>` overrides each.
    static func readSettings(_ section: ConfigReader) throws(ConfigError) -> Settings

    /// The sender's verifier. `fetcher` is the network for checks that need it (OCSP, key sets); nil
    /// keeps the sender offline. Files the settings name are read now, so a bad one stops start-up.
    static func makeSource(_ settings: Settings, fetcher: (any HTTPFetcher)?) throws(ConfigError) -> any WebhookSource

    /// Whether `/webhooks/<name>/<account>` routes too (the sender reads the account from the path, so
    /// `tollgate verify --path` selects it the same way).
    static var routesAccounts: Bool { get }

    /// Request headers of this sender's protocol worth keeping beside the raw body (besides the common
    /// ones), in particular those `tollgate replay` needs to verify it again. Never credentials.
    static var keptRequestHeaders: [String] { get }

    /// What an operator should hear at start-up about these settings (e.g. nothing configured).
    static func startupWarnings(_ settings: Settings) -> [StartupWarning]

    /// The settings for checking captured deliveries without the network (`tollgate verify` and
    /// `tollgate replay`): online checks off, or a refusal saying what to configure instead.
    static func offlineSettings(_ settings: Settings) throws(OfflineRefusal) -> Settings

    /// For `tollgate-load prepare`: generates the sender's keys and identities into `directory` and
    /// returns the body of its `sources.<name>` section (YAML flow mapping) that trusts them; nil when
    /// the sender has no load traffic.
    static func prepareLoad(in directory: LoadDirectory) throws -> String?

    /// For `tollgate-load run`: the traffic signed with what `prepareLoad` generated.
    static func loadTraffic(from directory: LoadDirectory) throws -> (any LoadTraffic)?
}

extension SenderDefinition {
    public static var routesAccounts: Bool { false }
    public static var keptRequestHeaders: [String] { [] }
    public static func startupWarnings(_ settings: Settings) -> [StartupWarning] { [] }
    public static func offlineSettings(_ settings: Settings) throws(OfflineRefusal) -> Settings { settings }
    public static func prepareLoad(in directory: LoadDirectory) throws -> String? { nil }
    public static func loadTraffic(from directory: LoadDirectory) throws -> (any LoadTraffic)? { nil }
}

/// A start-up warning: which process it concerns, the configuration key, and what it means.
public struct StartupWarning: Sendable, Equatable {
    public enum Process: Sendable, Equatable {
        /// `serve` (and `dev`): the webhook routes.
        case gateway
        /// `work` (and `dev`): the projection and its enrichment.
        case workers
    }

    public var process: Process
    public var key: String
    public var message: String

    public init(_ process: Process, key: String, _ message: String) {
        self.process = process
        self.key = key
        self.message = message
    }
}

/// Why a sender's settings cannot be used offline, with what to configure instead.
public struct OfflineRefusal: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
