import Config
import Events
import Verifiers

/// The one list of payment providers checkouts can be paid through. `POST /v1/checkouts`' `provider`,
/// the matching of notifications to checkouts and refunds all come from here; tests add a provider of
/// their own the same way (docs/adding-a-provider.md).
public struct CheckoutProviderCatalog: Sendable {
    /// The providers Tollgate ships: adding one is a folder under `Checkouts/Providers` and one line here.
    public static let standard = CheckoutProviderCatalog([
        AntomCheckouts.self,
        CitconCheckouts.self,
    ])

    private let entries: [Entry]

    public init(_ providers: [any CheckoutProvider.Type]) {
        entries = providers.map { Entry($0) }
    }

    /// A catalog with `providers` added (tests).
    public func adding(_ providers: [any CheckoutProvider.Type]) -> CheckoutProviderCatalog {
        CheckoutProviderCatalog(entries.map(\.type) + providers)
    }

    /// The providers' names, in catalog order.
    public var names: [SourceName] { entries.map(\.name) }

    /// Every provider's accounts, read (keys included) from `config`.
    public func readAccounts(_ config: TollgateConfig) throws(ConfigError) -> ConfiguredCheckoutProviders {
        var makers: [ConfiguredCheckoutProviders.Maker] = []
        for entry in entries { makers.append(try entry.read(config)) }
        return ConfiguredCheckoutProviders(makers: makers)
    }

    /// A provider type with its `Accounts` erased.
    private struct Entry: Sendable {
        let type: any CheckoutProvider.Type
        let name: SourceName
        let read: @Sendable (TollgateConfig) throws(ConfigError) -> ConfiguredCheckoutProviders.Maker

        init<Provider: CheckoutProvider>(_ provider: Provider.Type) {
            type = provider
            name = Provider.name
            read = { (config) throws(ConfigError) in
                let accounts = try Provider.readAccounts(config)
                return { context in Provider(accounts: accounts, context: context) }
            }
        }
    }
}

/// The providers with their accounts read, waiting for what their calls are made with.
public struct ConfiguredCheckoutProviders: Sendable {
    typealias Maker = @Sendable (CheckoutProviderContext) -> any CheckoutProvider
    let makers: [Maker]

    func providers(_ context: CheckoutProviderContext) -> CheckoutProviders {
        CheckoutProviders(makers.map { $0(context) })
    }
}

/// The providers checkouts are paid through, by name.
public struct CheckoutProviders: Sendable {
    private let byName: [String: any CheckoutProvider]
    /// In catalog order.
    public let names: [SourceName]

    init(_ providers: [any CheckoutProvider]) {
        byName = Dictionary(providers.map { ($0.name.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
        names = providers.map(\.name)
    }

    /// The provider named `name` (a checkout's `provider`, an event's source), or nil.
    public subscript(_ name: String) -> (any CheckoutProvider)? { byName[name] }
    public subscript(_ name: SourceName) -> (any CheckoutProvider)? { byName[name.rawValue] }

    /// `alipayplus or citcon`, for messages.
    var namesText: String {
        let texts = names.map(\.rawValue)
        guard texts.count > 1 else { return texts.first ?? "" }
        return texts.dropLast().joined(separator: ", ") + " or " + (texts.last ?? "")
    }
}
