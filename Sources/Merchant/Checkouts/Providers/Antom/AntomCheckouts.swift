import Config
import Events
import Logging
import ProviderAPIs
import Rejections
import Toolkit
import Verifiers

/// Checkouts paid through Alipay+ / Antom (docs/checkouts.md): Tollgate calls Antom's `pay` (Cashier
/// Payment) signed with the client's merchant key and answers its cashier page; refunds are asked of
/// Antom's `refund`. Notifications come through the Alipay+ sender, which verifies them with the same
/// client's keys (`AlipayPlusSource.antomAccounts`: the same `AntomAccount`, read by the same code).
public struct AntomCheckouts: CheckoutProvider {
    public static let name = SourceName.alipayplus
    public static let displayName = "Antom"

    /// Every configured client, by client id (those without a merchant key cannot start a payment).
    public typealias Accounts = [String: AntomAccount]

    public static func readAccounts(_ config: TollgateConfig) throws(ConfigError) -> Accounts {
        try AlipayPlusSource.antomAccounts(config.sources.alipayplus)
    }

    let accounts: Accounts
    let settings: CheckoutSettings
    let antom: AntomClient
    let logger: Logger
    let now: @Sendable () -> Int64

    public init(accounts: Accounts, context: CheckoutProviderContext) {
        self.accounts = accounts
        settings = context.settings
        antom = AntomClient(baseURL: context.settings.antomBaseURL, fetcher: context.fetcher,
                            timeout: .milliseconds(context.settings.antomTimeoutMs),
                            answerWindowSeconds: context.settings.antomAnswerWindowSeconds,
                            metrics: AntomAPIMetrics(factory: context.metricsFactory), logger: context.logger, now: context.now)
        logger = context.logger
        now = context.now
    }

    public let appPlacesOrder = false

    public func environment(account: String) throws(Rejection) -> NormalizedEvent.Environment {
        try signingAccount(account, for: "pay").eventEnvironment
    }

    /// The client `account` names, when it has the merchant key that signs `call`.
    private func signingAccount(_ account: String, for call: String) throws(Rejection) -> AntomAccount {
        guard let client = accounts[account] else {
            throw Rejection(.providerNotConfigured, "no Alipay+ client \(account) is configured (sources.alipayplus.clients)")
        }
        guard client.merchantKey != nil else {
            throw Rejection(.providerNotConfigured, "Alipay+ client \(account) has no merchantPrivateKey to sign the \(call) call")
        }
        return client
    }

    public func notifyURL(account: String, publicBase: String) -> String { "\(publicBase)/webhooks/alipayplus" }

    public func startPayment(_ checkout: CheckoutRecord) async throws(Rejection) -> String? {
        let client = try signingAccount(checkout.account, for: "pay")
        let payment = AntomClient.CashierPayment(
            paymentRequestId: checkout.reference, referenceOrderId: checkout.id, orderDescription: checkout.product,
            currency: checkout.currency, amountMinor: checkout.amountMinor, paymentMethodType: settings.antomPaymentMethodType,
            redirectURL: settings.antomRedirectURL ?? settings.publicBaseURL ?? "", notifyURL: checkout.notifyURL ?? "")
        switch await antom.pay(payment, account: client) {
        case .paymentPage(let page): return page
        case .refused(let code): throw Rejection(.paymentRefused, "Antom refused the payment: \(code)")
        case .unavailable: throw Rejection(.paymentProviderUnavailable, "Antom cannot start the payment now", retryAfterSeconds: 30)
        }
    }

    public func checkRefundable(_ checkout: CheckoutRecord) throws(Rejection) {
        _ = try signingAccount(checkout.account, for: "refund")
        guard checkout.paymentId != nil else {
            throw Rejection(.checkoutNotRefundable, "Antom's paymentId for this checkout is not known, so Antom cannot be asked to refund it")
        }
    }

    public func refund(_ checkout: CheckoutRecord, refundRequestId: String) async -> CheckoutRefundOutcome {
        guard let client = accounts[checkout.account], let paymentId = checkout.paymentId else { return .unavailable }
        switch await antom.refund(refundRequestId: refundRequestId, paymentId: paymentId, currency: checkout.currency,
                                  amountMinor: checkout.amountMinor, notifyURL: checkout.notifyURL ?? "", account: client) {
        case .refunded(let answer):
            // AntomClient took only an S answer naming this refundRequestId: the event names the checkout by it.
            do {
                return .refunded(try AlipayPlusSource.refundSucceeded(clientId: checkout.account, answer: answer, environment: checkout.environment,
                                                                      receivedAt: Timestamp(millisecondsSince1970: now())))
            } catch {
                logger.warning("Antom's refund answer could not be made an event; its notification will apply the refund",
                               metadata: ["checkout": .string(checkout.id), "error": .string("\(error)")])
                return .refunded(nil)
            }
        case .inProcess: return .inProcess
        case .refused(let code): return .refused(resultCode: code)
        case .unavailable: return .unavailable
        }
    }

    public func checkoutReference(of event: NormalizedEvent) -> CheckoutReference {
        event.isAlipayPlusRefundResult ? .refundRequest(id: event.subject) : .payment(reference: event.subject)
    }

    /// Antom's `paymentId`: what its refund call names.
    public func paymentId(of event: NormalizedEvent) -> String? { event.transaction?.id }
}
