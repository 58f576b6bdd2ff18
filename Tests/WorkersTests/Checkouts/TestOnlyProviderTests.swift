import Config
import Entitlements
import Events
import Foundation
import Logging
import Outbound
import Rejections
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import Workers

/// A payment provider that exists only in this file, added to `CheckoutProviderCatalog` as the shipped
/// ones are: one account (`probe-shop`), a payment page it makes up, refunds answered at once with the
/// event its notification would carry. Nothing outside this file names it, which is what "a provider is
/// one folder and one catalog line" promises (docs/adding-a-provider.md).
struct ProbePay: CheckoutProvider {
    static let name = SourceName("probepay")
    static let displayName = "ProbePay"
    static let account = "probe-shop"

    /// The account's environment; reading it fails as a missing key file would, naming its key.
    typealias Accounts = [String: NormalizedEvent.Environment]

    static func readAccounts(_ config: TollgateConfig) throws(ConfigError) -> Accounts {
        guard config.checkouts.publicBaseURL != nil else { throw ConfigError(key: "probepay", message: "needs checkouts.publicBaseURL") }
        return [account: .production]
    }

    let accounts: Accounts
    let now: @Sendable () -> Int64

    init(accounts: Accounts, context: CheckoutProviderContext) {
        self.accounts = accounts
        now = context.now
    }

    let appPlacesOrder = false

    func environment(account: String) throws(Rejection) -> NormalizedEvent.Environment {
        guard let environment = accounts[account] else { throw Rejection(CheckoutReason.providerNotConfigured, "no ProbePay account \(account)") }
        return environment
    }

    func notifyURL(account: String, publicBase: String) -> String { "\(publicBase)/webhooks/probepay/\(account)" }

    static func page(_ reference: String) -> String { "https://probepay.example/pay/\(reference)" }

    func startPayment(_ checkout: CheckoutRecord) async throws(Rejection) -> String? {
        guard checkout.product != "declined.gem" else { throw Rejection(CheckoutReason.paymentRefused, "ProbePay refused the payment: DECLINED") }
        return Self.page(checkout.reference)
    }

    func checkRefundable(_ checkout: CheckoutRecord) throws(Rejection) {
        guard checkout.paymentId != nil else { throw Rejection(CheckoutReason.checkoutNotRefundable, "no ProbePay payment id") }
    }

    func refund(_ checkout: CheckoutRecord, refundRequestId: String) async -> CheckoutRefundOutcome {
        .refunded(Self.event(.purchaseRefunded, subject: refundRequestId, id: "probepay:refund:\(refundRequestId)", sourceType: "refund_result"))
    }

    func checkoutReference(of event: NormalizedEvent) -> CheckoutReference {
        event.sourceType == "refund_result" ? .refundRequest(id: event.subject) : .payment(reference: event.subject)
    }

    func paymentId(of event: NormalizedEvent) -> String? { event.transaction?.id }

    /// What ProbePay's verified notification would be.
    static func event(_ type: EventType, subject: String, id: String, sourceType: String, price: NormalizedEvent.Price? = nil,
                      paymentId: String? = nil) -> NormalizedEvent {
        NormalizedEvent(id: id, type: type, source: "/probepay/\(account)", environment: .production, app: account, subject: subject,
                        occurredAt: Timestamp.now.rfc3339, receivedAt: Timestamp.now.rfc3339,
                        transaction: NormalizedEvent.Transaction(id: paymentId), price: price, sourceType: sourceType)
    }
}

@Suite("A payment provider defined only in the tests takes checkouts, pays them and refunds them")
struct TestOnlyProviderTests {
    static let catalog = CheckoutProviderCatalog.standard.adding([ProbePay.self])
    static let token = "probe-server-token-0123"
    static let user = "user-7"

    static func config() -> TollgateConfig {
        var config = TollgateConfig()
        config.checkouts.publicBaseURL = "https://pay.example.com"
        config.catalog = CatalogSettings(apps: [
            .init(name: "probe-app", ids: [ProbePay.account], products: [
                .init(id: "gem", pricesMinor: ["USD": 500], entitlements: ["gems"]),
                .init(id: "declined.gem", pricesMinor: ["USD": 500]),
            ]),
        ])
        return config
    }

    static func body(provider: String = "probepay", product: String = "gem") -> String {
        #"{"app":"\#(ProbePay.account)","user":"\#(user)","product":"\#(product)","currency":"USD","provider":"\#(provider)"}"#
    }

    @Test("reading its accounts is part of the start: a failure names its key")
    func readAtStart() throws {
        #expect(throws: ConfigError.self) { try CheckoutSetup.make(config: TollgateConfig(), fetcher: HTTPClientFetcher(), catalog: Self.catalog) }
        let setup = try CheckoutSetup.make(config: Self.config(), fetcher: HTTPClientFetcher(), catalog: Self.catalog)
        #expect(setup.providers.makers.count == 3)
    }

    @Test("POST /v1/checkouts names it; the workers pay the checkout by its notification and its refund answer takes it back")
    func checkoutThroughTheSeam() async throws {
        let setup = try CheckoutSetup.make(config: Self.config(), fetcher: HTTPClientFetcher(), catalog: Self.catalog)
        var logger = Logger(label: "probe-provider-test")
        logger.logLevel = .critical
        try await TestDatabases.withStore(.sqlite) { store in
            try await WorkerHarness.with { harness in
                let published = RecordingPublisher()
                let metrics = MerchantMetrics(factory: RecordingMetrics())
                let service = CheckoutService(setup: setup, store: store, metrics: metrics, logger: logger,
                                              publisher: published)
                let credentials = APICredentials(tokens: [APIToken(Self.token, refunds: true)], userTokenKeys: [:],
                                                 ratePerSecond: 1_000, rateBurst: 1_000)
                let api = CheckoutAPI(service: service, credentials: credentials, catalog: Self.config().catalog, metrics: metrics, logger: logger)

                // A provider the catalog does not have is refused, naming the ones it has.
                let unknown = try await api.post(Self.body(provider: "stripe"), token: Self.token)
                #expect(unknown.status == 400 && unknown.error == "invalid_field")
                #expect(unknown.string("message") == "provider must be alipayplus, citcon or probepay")
                // Its refusal to start a payment is answered, and leaves no checkout behind.
                let declined = try await api.post(Self.body(product: "declined.gem"), token: Self.token)
                #expect(declined.status == 422 && declined.error == "payment_refused", "\(declined.text)")
                #expect(try await service.records.pending(app: ProbePay.account, environment: .production, user: Self.user, product: "declined.gem",
                                                          provider: ProbePay.name, nowMs: Timestamp.now.millisecondsSince1970).isEmpty)

                let created = try await api.post(Self.body(), token: Self.token)
                #expect(created.status == 201, "\(created.text)")
                let id = try #require(created.string("id"))
                let reference = try #require(created.string("reference"))
                #expect(created.string("provider") == "probepay" && created.string("environment") == "production")
                #expect(created.string("paymentUrl") == ProbePay.page(reference))
                #expect(created.json?["ipnUrl"] == nil)

                try await harness.withWorkers(store: store, checkouts: setup) { _ in
                    let paid = ProbePay.event(.purchaseCompleted, subject: reference, id: "probepay:pay:\(reference)", sourceType: "payment",
                                              price: .init(amountMicros: 5_000_000, currency: "USD"), paymentId: "pp-\(reference)")
                    try await harness.publish(paid)
                    try await waitUntil("the user entitled") { try await store.entitles(app: ProbePay.account, user: Self.user, product: "gem") }
                    let shown = try await api.get(id, token: Self.token)
                    #expect(shown.string("state") == "paid" && shown.string("paymentId") == "pp-\(reference)")

                    let refunded = try await api.askRefund(id, token: Self.token)
                    #expect(refunded.status == 202, "\(refunded.text)")
                    let answer = try #require(published.events.withLock { $0 }.first)
                    #expect(answer.subject == refunded.string("refundRequestId"))
                    try await harness.publish(answer)
                    try await waitUntil("the entitlement taken back") {
                        try await !store.entitles(app: ProbePay.account, user: Self.user, product: "gem")
                    }
                    #expect(try await api.get(id, token: Self.token).string("state") == "refunded")
                }
            }
        }
    }
}
