import Config
import Events
import Rejections
import Verifiers

/// Checkouts paid through Citcon (docs/checkouts.md): the app's Citcon SDK makes the order itself, with
/// the checkout's `reference` and the IPN URL Tollgate answers, so starting one calls nobody. Refunds
/// are started at Citcon; its refund IPN, through the Citcon sender, takes the checkout back.
public struct CitconCheckouts: CheckoutProvider {
    public static let name = SourceName.citcon
    public static let displayName = "Citcon"

    /// Every account's environment, by name.
    public typealias Accounts = [String: NormalizedEvent.Environment]

    public static func readAccounts(_ config: TollgateConfig) throws(ConfigError) -> Accounts {
        Dictionary(config.sources.citcon.accounts.map { ($0.name, $0.environment) }, uniquingKeysWith: { first, _ in first })
    }

    let accounts: Accounts

    public init(accounts: Accounts, context: CheckoutProviderContext) {
        self.accounts = accounts
    }

    public let appPlacesOrder = true

    public func environment(account: String) throws(Rejection) -> NormalizedEvent.Environment {
        guard let environment = accounts[account] else {
            throw Rejection(.providerNotConfigured, "no Citcon account \(account) is configured (sources.citcon.accounts)")
        }
        return environment
    }

    /// The account's own route: Citcon's IPN names no account, so the path does.
    public func notifyURL(account: String, publicBase: String) -> String { "\(publicBase)/webhooks/citcon/\(account)" }

    public func startPayment(_ checkout: CheckoutRecord) async throws(Rejection) -> String? { nil }

    public func checkRefundable(_ checkout: CheckoutRecord) throws(Rejection) {
        throw Rejection(.checkoutNotRefundable, "a citcon refund is started at citcon; its refund notification takes the checkout back")
    }

    /// Never called: `checkRefundable` refuses every checkout.
    public func refund(_ checkout: CheckoutRecord, refundRequestId: String) async -> CheckoutRefundOutcome {
        .refused(resultCode: "REFUNDED_AT_CITCON")
    }

    public func checkoutReference(of event: NormalizedEvent) -> CheckoutReference { .payment(reference: event.subject) }

    /// A Citcon refund is started at Citcon, so nothing needs the payment's id.
    public func paymentId(of event: NormalizedEvent) -> String? { nil }
}
