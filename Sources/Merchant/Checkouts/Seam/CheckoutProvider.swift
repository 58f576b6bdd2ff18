import Config
import Events
import Logging
import Metrics
import Rejections
import Toolkit
import Verifiers

/// A payment provider checkouts are paid through (docs/adding-a-provider.md): a folder under
/// `Checkouts/Providers` and one line in `CheckoutProviderCatalog.standard`. Its notifications come
/// through the sender of the same name, which verifies and normalizes them; the provider says what its
/// checkouts need beyond that: which accounts can take one, how a payment starts and a refund is asked,
/// and which checkout a verified notification names. Nothing outside the provider's folder names it.
public protocol CheckoutProvider: Sendable {
    /// What the provider reads from the configuration when the workers start (keys included), so a bad
    /// key file stops the start with its configuration key.
    associatedtype Accounts: Sendable

    /// The sender whose verified notifications pay and refund this provider's checkouts; the `provider`
    /// a checkout names.
    static var name: SourceName { get }
    /// How people call the provider, in messages (`Antom`).
    static var displayName: String { get }
    static func readAccounts(_ config: TollgateConfig) throws(ConfigError) -> Accounts
    init(accounts: Accounts, context: CheckoutProviderContext)

    /// Whether the app's own SDK makes the order, with the checkout's `reference` and the notification
    /// URL Tollgate gives it (Citcon), instead of Tollgate starting the payment (Antom's cashier page).
    var appPlacesOrder: Bool { get }
    /// The environment of the account `account` names, or why it cannot take a checkout (`provider_not_configured`).
    func environment(account: String) throws(Rejection) -> NormalizedEvent.Environment
    /// Where the provider sends its notifications for `account`, on `checkouts.publicBaseURL`.
    func notifyURL(account: String, publicBase: String) -> String
    /// Starts the payment of a recorded pending checkout: the page the payer pays on, or nil when the
    /// app places the order. Refusals are `payment_refused` or `payment_provider_unavailable`.
    func startPayment(_ checkout: CheckoutRecord) async throws(Rejection) -> String?
    /// Why a paid checkout cannot be refunded through Tollgate (`checkout_not_refundable`,
    /// `provider_not_configured`); returns when it can.
    func checkRefundable(_ checkout: CheckoutRecord) throws(Rejection)
    /// Asks for a full refund of a paid checkout that `checkRefundable` passed, under `refundRequestId`,
    /// which the same request repeats so the provider refunds at most once.
    func refund(_ checkout: CheckoutRecord, refundRequestId: String) async -> CheckoutRefundOutcome
    /// Which checkout a verified notification of this provider names, by what.
    func checkoutReference(of event: NormalizedEvent) -> CheckoutReference
    /// The provider's id of the payment a paid notification reports, kept for a later refund; nil: none is needed.
    func paymentId(of event: NormalizedEvent) -> String?
}

extension CheckoutProvider {
    public var name: SourceName { Self.name }
    public var displayName: String { Self.displayName }
}

/// What a provider's calls are made with, given when the workers compose the checkouts.
public struct CheckoutProviderContext: Sendable {
    public let settings: CheckoutSettings
    /// Makes the provider's HTTP calls.
    public let fetcher: any HTTPFetcher
    public let metricsFactory: any MetricsFactory
    public let logger: Logger
    public let now: @Sendable () -> Int64
}

/// How a verified notification names its checkout.
public enum CheckoutReference: Sendable, Equatable {
    /// A payment, refund or chargeback of the checkout whose `reference` this is.
    case payment(reference: String)
    /// The result of a refund Tollgate asked for, by the `refundRequestId` it sent.
    case refundRequest(id: String)
}

/// What the provider answered a refund request.
public enum CheckoutRefundOutcome: Sendable {
    /// Refunded now: the event its answer reports (the one its notification would give), published so
    /// the refund applies even if the notification never comes; nil when the answer cannot be made one.
    case refunded(NormalizedEvent?)
    /// Under way: the provider's notification ends it.
    case inProcess
    /// Refused, with the provider's result code: a later request needs a new request id.
    case refused(resultCode: String)
    /// Not answered now: asking again repeats the same request.
    case unavailable
}
