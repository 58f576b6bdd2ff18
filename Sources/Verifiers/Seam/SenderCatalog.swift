import Config
import Events
import Foundation
import Toolkit

/// The one list of senders. Routes, configuration sections, raw topics, readiness, `tollgate verify`
/// and `tollgate replay` all come from here; tests register a sender of their own the same way.
public struct SenderCatalog: Sendable {
    /// The senders Tollgate ships: adding one is a folder under Sources/Verifiers and one line here.
    public static let standard = SenderCatalog([
        AppleSender.self,
        GoogleSender.self,
        CitconSender.self,
        IapticSender.self,
        AlipayPlusSender.self,
    ])

    private let entries: [Entry]

    public init(_ definitions: [any SenderDefinition.Type]) {
        entries = definitions.map { Entry($0) }
    }

    /// The senders' names, in catalog order.
    public var names: [SourceName] { entries.map(\.name) }

    /// A catalog with `definitions` added (tests).
    public func adding(_ definitions: [any SenderDefinition.Type]) -> SenderCatalog {
        SenderCatalog(entries: entries + definitions.map { Entry($0) })
    }

    private init(entries: [Entry]) { self.entries = entries }

    /// The sender named `text` (a route segment, `--source`, `--from raw.<name>`), or nil.
    public func name(_ text: String) -> SourceName? { names.first { $0.rawValue == text } }

    // MARK: Configuration

    /// Each sender's section reader, for `ConfigLoader`.
    public var configSections: [SenderConfigSection] { entries.map(\.configSection) }

    /// `ConfigLoader.load` with every sender's section.
    public func loadConfig(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> TollgateConfig {
        try ConfigLoader.load(path: path, environment: environment, senders: configSections)
    }

    /// `ConfigLoader.parse` with every sender's section.
    public func parseConfig(yaml: String, origin: String = "(text)", environment: [String: String] = [:]) throws(ConfigError) -> TollgateConfig {
        try ConfigLoader.parse(yaml: yaml, origin: origin, environment: environment, senders: configSections)
    }

    /// What every sender says about its settings at start-up, for one kind of process.
    public func startupWarnings(_ settings: SourcesSettings, process: StartupWarning.Process) -> [StartupWarning] {
        entries.flatMap { $0.startupWarnings(settings) }.filter { $0.process == process }
    }

    // MARK: Sources

    /// Every sender's verifier, built from its settings. `fetcher` nil keeps every sender offline.
    public func registry(_ settings: SourcesSettings, fetcher: (any HTTPFetcher)? = nil) throws(ConfigError) -> SourceRegistry {
        var senders: [SourceRegistry.Sender] = []
        for entry in entries {
            let source: any WebhookSource
            do {
                source = try entry.makeSource(settings, fetcher, false)
            } catch let error as ConfigError {
                throw error
            } catch {
                throw ConfigError(key: "sources.\(entry.name.rawValue)", message: "\(error)")
            }
            senders.append(SourceRegistry.Sender(source: source, routesAccounts: entry.routesAccounts,
                                                 keptRequestHeaders: entry.keptRequestHeaders))
        }
        return SourceRegistry(senders)
    }

    /// One sender's verifier for checking captured deliveries offline (`tollgate verify`, `tollgate replay`).
    /// `name` is what the operator typed (`--source`, `--from raw.<name>`).
    public func offlineSource(named name: String, settings: SourcesSettings, fetcher: (any HTTPFetcher)? = nil) throws(OfflineSourceError) -> any WebhookSource {
        guard let entry = entries.first(where: { $0.name.rawValue == name }) else { throw .unknownSender(name, names) }
        do {
            return try entry.makeSource(settings, fetcher, true)
        } catch let error as OfflineRefusal {
            throw .refused(error)
        } catch let error as ConfigError {
            throw .configuration(error)
        } catch {
            throw .configuration(ConfigError(key: "sources.\(name)", message: "\(error)"))
        }
    }

    // MARK: Load traffic (`tollgate-load`)

    /// Every sender's keys into `directory`, and its section of the gateway's configuration.
    public func prepareLoad(in directory: String) throws -> [(name: SourceName, section: String)] {
        try entries.compactMap { entry in
            try entry.prepareLoad(LoadDirectory(path: directory, sender: entry.name)).map { (entry.name, $0) }
        }
    }

    /// The traffic of the sender named `name`, signed with what `prepareLoad` wrote into `directory`.
    public func loadTraffic(named name: String, directory: String) throws -> any LoadTraffic {
        guard let entry = entries.first(where: { $0.name.rawValue == name }),
              let traffic = try entry.loadTraffic(LoadDirectory(path: directory, sender: entry.name)) else {
            throw LoadSetupError("no load traffic for \(name) (senders with traffic: \(entries.map(\.name.rawValue).joined(separator: ", ")))")
        }
        return traffic
    }

    /// A definition with its associated `Settings` type erased.
    private struct Entry: Sendable {
        let name: SourceName
        let routesAccounts: Bool
        let keptRequestHeaders: [String]
        let configSection: SenderConfigSection
        let makeSource: @Sendable (SourcesSettings, (any HTTPFetcher)?, _ offline: Bool) throws -> any WebhookSource
        let startupWarnings: @Sendable (SourcesSettings) -> [StartupWarning]
        let prepareLoad: @Sendable (LoadDirectory) throws -> String?
        let loadTraffic: @Sendable (LoadDirectory) throws -> (any LoadTraffic)?

        init<Definition: SenderDefinition>(_ definition: Definition.Type) {
            let name = Definition.name
            self.name = name
            routesAccounts = Definition.routesAccounts
            keptRequestHeaders = Definition.keptRequestHeaders
            configSection = SenderConfigSection(name: name) { (section) throws(ConfigError) in try Definition.readSettings(section) }
            makeSource = { sources, fetcher, offline in
                var settings = try Self.settings(Definition.self, sources)
                if offline { settings = try Definition.offlineSettings(settings) }
                return try Definition.makeSource(settings, fetcher: fetcher)
            }
            startupWarnings = { sources in (try? Self.settings(Definition.self, sources)).map(Definition.startupWarnings) ?? [] }
            prepareLoad = { try Definition.prepareLoad(in: $0) }
            loadTraffic = { try Definition.loadTraffic(from: $0) }
        }

        /// The sender's settings as read, or its defaults when the configuration was read without it.
        private static func settings<Definition: SenderDefinition>(_ definition: Definition.Type, _ sources: SourcesSettings) throws(ConfigError) -> Definition.Settings {
            if let settings = sources.settings(Definition.name, as: Definition.Settings.self) { return settings }
            return try Definition.readSettings(ConfigReader(empty: ["sources", Definition.name.rawValue]))
        }
    }
}

/// Why `SenderCatalog.offlineSource` has no verifier to give.
public enum OfflineSourceError: Error, Sendable, CustomStringConvertible {
    case unknownSender(String, [SourceName])
    case refused(OfflineRefusal)
    case configuration(ConfigError)

    public var description: String {
        switch self {
        case .unknownSender(let name, let known):
            "no sender is named \(name) (known: \(known.map(\.rawValue).joined(separator: ", ")))"
        case .refused(let refusal): refusal.description
        case .configuration(let error): "\(error)"
        }
    }
}
