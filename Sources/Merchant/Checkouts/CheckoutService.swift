import Config
import Entitlements
import Events
import Foundation
import Logging
import ProviderAPIs
import Rejections
import Store
import Toolkit
import Verifiers

/// What checkouts need from the configuration, read (keys included) when the workers start, so a
/// missing key file stops the start with its configuration key.
public struct CheckoutSetup: Sendable {
    let settings: CheckoutSettings
    /// The Alipay+ clients with a merchant key, by client id.
    let merchants: [String: AntomMerchant]
    /// Every Alipay+ client's environment (those without a merchant key cannot start a payment).
    let alipayClients: [String: NormalizedEvent.Environment]
    /// Every Citcon account's environment, by name.
    let citconAccounts: [String: NormalizedEvent.Environment]
    /// Makes the calls of Antom's API.
    let fetcher: any HTTPFetcher

    public static func make(config: TollgateConfig, fetcher: any HTTPFetcher) throws(ConfigError) -> CheckoutSetup {
        // The Alipay+ sender's own reading of the clients' keys: one configuration for notifications and calls.
        let merchants = try AlipayPlusSource.antomMerchants(config.sources.alipayplus)
        var alipayClients: [String: NormalizedEvent.Environment] = [:]
        for client in config.sources.alipayplus.clients {
            alipayClients[client.clientId] = client.clientId.hasPrefix("SANDBOX_") ? .sandbox : client.environment
        }
        let citcon = Dictionary(config.sources.citcon.accounts.map { ($0.name, $0.environment) }, uniquingKeysWith: { first, _ in first })
        return CheckoutSetup(settings: config.checkouts, merchants: merchants, alipayClients: alipayClients, citconAccounts: citcon,
                             fetcher: fetcher)
    }

    init(settings: CheckoutSettings, merchants: [String: AntomMerchant], alipayClients: [String: NormalizedEvent.Environment],
         citconAccounts: [String: NormalizedEvent.Environment], fetcher: any HTTPFetcher) {
        self.settings = settings
        self.merchants = merchants
        self.alipayClients = alipayClients
        self.citconAccounts = citconAccounts
        self.fetcher = fetcher
    }
}

/// Records a checkout and starts its payment (docs/checkouts.md). The checkout's `app` names the
/// provider account its notification comes back under (the Alipay+ client id or the Citcon account
/// name), which is the `app` the entitlement is kept under. Antom: the row is written pending, then
/// `pay` is called; on any failure the row is deleted, so no checkout is left half-made. Citcon: the
/// app's SDK makes the order, so the answer is the reference and IPN URL to put in it. A paid Antom
/// checkout is refunded through `refund`: Antom's signed answer or its refund notification then takes
/// it back.
public struct CheckoutService: CheckoutStarting {
    let setup: CheckoutSetup
    let records: CheckoutRecords
    let antom: AntomClient
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64
    /// Publishes events on `tollgate.events` (the refund Antom's answer reports done); nil: none are.
    let publish: (@Sendable ([NormalizedEvent]) async throws -> Void)?

    public init(setup: CheckoutSetup, store: EntitlementStore, metrics: MerchantMetrics, logger: Logger,
         now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
         publish: (@Sendable ([NormalizedEvent]) async throws -> Void)? = nil) {
        self.publish = publish
        self.setup = setup
        records = CheckoutRecords(store: store)
        antom = AntomClient(baseURL: setup.settings.antomBaseUrl, fetcher: setup.fetcher, timeout: .milliseconds(setup.settings.antomTimeoutMs),
                            answerWindowSeconds: setup.settings.antomAnswerWindowSeconds,
                            metrics: AntomAPIMetrics(factory: metrics.factory), logger: logger, now: now)
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// The environment of the account `app` names for `provider`, or why none can take a checkout.
    func account(provider: SourceName, app: String) throws(Rejection) -> NormalizedEvent.Environment {
        guard setup.settings.publicBaseUrl != nil else {
            throw Rejection(.providerNotConfigured, "checkouts.publicBaseUrl is not set, so no notification URL can be given")
        }
        switch provider {
        case .alipayplus:
            guard let environment = setup.alipayClients[app] else {
                throw Rejection(.providerNotConfigured, "no Alipay+ client \(app) is configured (sources.alipayplus.clients)")
            }
            guard setup.merchants[app] != nil else {
                throw Rejection(.providerNotConfigured, "Alipay+ client \(app) has no merchantPrivateKey to sign the pay call")
            }
            return environment
        case .citcon:
            guard let environment = setup.citconAccounts[app] else {
                throw Rejection(.providerNotConfigured, "no Citcon account \(app) is configured (sources.citcon.accounts)")
            }
            return environment
        default:
            throw Rejection(.invalidField, "provider must be alipayplus or citcon")
        }
    }

    public func start(_ intent: CheckoutIntent) async throws(Rejection) -> StartedCheckout {
        try await startOrRepeat(intent).checkout
    }

    /// The checkout started, or the same pending one again when this user already asked for this
    /// product with this amount (`repeated`); 409 when the pending one differs.
    func startOrRepeat(_ intent: CheckoutIntent) async throws(Rejection) -> (checkout: StartedCheckout, record: CheckoutRecord, repeated: Bool) {
        let environment = try account(provider: intent.provider, app: intent.app)
        let nowMs = now()
        let pending: [CheckoutRecord]
        do throws(StoreError) {
            pending = try await records.pending(app: intent.app, environment: environment, user: intent.user, product: intent.product,
                                                provider: intent.provider, nowMs: nowMs)
        } catch {
            throw storeUnavailable(error)
        }
        if let existing = pending.first {
            guard existing.amountMinor == intent.amountMinor, existing.currency == intent.currency else {
                metrics.checkoutStarted(provider: intent.provider.rawValue, outcome: "conflict")
                throw Rejection(.checkoutConflict,
                                      "checkout \(existing.id) for this user and product is pending with another amount or currency")
            }
            if existing.provider == .citcon || existing.paymentURL != nil {
                metrics.checkoutStarted(provider: intent.provider.rawValue, outcome: "repeated")
                return (Self.started(existing), existing, true)
            }
        }
        let base = setup.settings.publicBaseUrl ?? ""
        var record = CheckoutRecord(
            id: "co_" + Self.randomHex(16), app: intent.app, user: intent.user, product: intent.product, amountMinor: intent.amountMinor,
            currency: intent.currency, provider: intent.provider, account: intent.app, reference: "tg" + Self.randomHex(15),
            environment: environment, state: .pending, paymentURL: nil,
            notifyURL: intent.provider == .citcon ? "\(base)/webhooks/citcon/\(intent.app)" : "\(base)/webhooks/alipayplus",
            createdAtMs: nowMs, expiresAtMs: nowMs + Int64(setup.settings.expirySeconds) * 1000, paidEventId: nil)
        do throws(StoreError) { try await records.insert(record) } catch { throw storeUnavailable(error) }

        if intent.provider == .alipayplus, let merchant = setup.merchants[intent.app] {
            let payment = AntomClient.CashierPayment(
                paymentRequestId: record.reference, referenceOrderId: record.id, orderDescription: intent.product,
                currency: intent.currency, amountMinor: intent.amountMinor, paymentMethodType: setup.settings.antomPaymentMethodType,
                redirectURL: setup.settings.antomRedirectUrl ?? base, notifyURL: record.notifyURL ?? "")
            let outcome = await antom.pay(payment, merchant: merchant)
            guard case .paymentPage(let page) = outcome else {
                await removeHalfMade(record.id)
                if case .refused(let code) = outcome {
                    metrics.checkoutStarted(provider: intent.provider.rawValue, outcome: "refused")
                    throw Rejection(.paymentRefused, "Antom refused the payment: \(code)")
                }
                metrics.checkoutStarted(provider: intent.provider.rawValue, outcome: "unavailable")
                throw Rejection(.paymentProviderUnavailable, "Antom cannot start the payment now", retryAfterSeconds: 30)
            }
            do throws(StoreError) {
                try await records.setPaymentURL(page, id: record.id, nowMs: now())
            } catch {
                await removeHalfMade(record.id)
                throw storeUnavailable(error)
            }
            record.paymentURL = page
        }
        metrics.checkoutStarted(provider: intent.provider.rawValue, outcome: "created")
        logger.info("checkout started", metadata: ["checkout": .string(record.id), "provider": .string(record.provider.rawValue),
                                                   "app": .string(record.app)])
        return (Self.started(record), record, false)
    }

    /// Asks Antom to refund a paid checkout in full (`POST /v1/checkouts/{id}/refund`). The
    /// `refundRequestId` is recorded before the call, so the notification finds the checkout even when it
    /// overtakes the answer, and kept until the refund ends, so asking again (after a 503) repeats the same
    /// request, which Antom's idempotency refunds at most once. An S answer is published as the event
    /// Antom's notification would give (same id), so the refund applies even if the notification never
    /// comes; until the projection applies it the checkout stays `paid`. True when the refund is under
    /// way, false when the checkout was already refunded.
    func refund(_ checkout: CheckoutRecord) async throws(Rejection) -> Bool {
        if checkout.state == .refunded { return false }
        guard checkout.state == .paid else {
            throw Rejection(.checkoutNotRefundable, "the checkout is \(checkout.state.rawValue); only a paid checkout can be refunded")
        }
        guard checkout.provider == .alipayplus else {
            throw Rejection(.checkoutNotRefundable,
                                  "a \(checkout.provider.rawValue) refund is started at \(checkout.provider.rawValue); its refund notification takes the checkout back")
        }
        guard let merchant = setup.merchants[checkout.account] else {
            throw Rejection(.providerNotConfigured, "Alipay+ client \(checkout.account) has no merchantPrivateKey to sign the refund call")
        }
        guard let paymentId = checkout.paymentId else {
            throw Rejection(.checkoutNotRefundable, "Antom's paymentId for this checkout is not known, so Antom cannot be asked to refund it")
        }
        let recorded: String?
        do throws(StoreError) {
            recorded = try await records.recordRefundRequest(proposed: "rf" + Self.randomHex(15), id: checkout.id, nowMs: now())
        } catch {
            throw storeUnavailable(error)
        }
        guard let refundRequestId = recorded else {
            // No longer paid: refunded meanwhile (answered as such), or something else.
            let current = try? await records.find(id: checkout.id)
            if current?.state == .refunded { return false }
            throw Rejection(.checkoutNotRefundable, "the checkout is no longer paid; only a paid checkout can be refunded")
        }
        switch await antom.refund(refundRequestId: refundRequestId, paymentId: paymentId, currency: checkout.currency,
                                  amountMinor: checkout.amountMinor, notifyURL: checkout.notifyURL ?? "", merchant: merchant) {
        case .refunded(let answer):
            metrics.checkoutRefund(outcome: "refunded")
            logger.info("checkout refunded by Antom's answer", metadata: ["checkout": .string(checkout.id)])
            await publishRefund(answer, checkout: checkout)
            return true
        case .inProcess:
            metrics.checkoutRefund(outcome: "requested")
            logger.info("checkout refund requested", metadata: ["checkout": .string(checkout.id)])
            return true
        case .refused(let code):
            metrics.checkoutRefund(outcome: "refused")
            // Antom answers the same refundRequestId with the same F, so a later request needs a new one.
            do throws(StoreError) {
                try await records.clearRefundRequest(refundRequestId, id: checkout.id, nowMs: now())
            } catch {
                logger.error("a refused refund request could not be cleared", metadata: ["checkout": .string(checkout.id)])
            }
            throw Rejection(.refundRefused, "Antom refused the refund: \(code)")
        case .unavailable:
            metrics.checkoutRefund(outcome: "unavailable")
            throw Rejection(.paymentProviderUnavailable, "Antom cannot take the refund now; ask again", retryAfterSeconds: 30)
        }
    }

    /// Antom's S answer as the refund event; a failure here only leaves the refund to the notification.
    private func publishRefund(_ answer: [String: JSONValue], checkout: CheckoutRecord) async {
        guard let publish else { return }
        // AntomClient took only an S answer naming this refundRequestId: the event names the checkout by it.
        do {
            let event = try AlipayPlusSource.refundSucceeded(clientId: checkout.account, answer: answer,
                                                             environment: checkout.environment, receivedAt: Timestamp(millisecondsSince1970: now()))
            try await publish([event])
        } catch {
            logger.warning("the refund Antom answered could not be published; its notification will apply it",
                           metadata: ["checkout": .string(checkout.id), "error": .string("\(error)")])
        }
    }

    /// Deleting may fail too (the store is down): the row then stays pending, without a payment URL,
    /// until it expires, and a notification can never name its reference since Antom never saw it.
    private func removeHalfMade(_ id: String) async {
        do { try await records.delete(id: id) } catch {
            logger.error("a checkout whose payment did not start could not be removed", metadata: ["checkout": .string(id),
                                                                                                  "error": .string("\(error)")])
        }
    }

    private func storeUnavailable(_ error: StoreError) -> Rejection {
        logger.error("checkout store call failed", metadata: ["error": .string("\(error)")])
        return Rejection(.storeUnavailable, "the checkout store cannot answer now", retryAfterSeconds: 5)
    }

    /// `bytes` from the system's cryptographically secure generator (getrandom on Linux), as hex: ids
    /// and references nobody can guess (docs/checkouts.md).
    static func randomHex(_ bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for _ in 0..<bytes {
            let byte = UInt8.random(in: 0...255, using: &generator)
            text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func started(_ record: CheckoutRecord) -> StartedCheckout {
        StartedCheckout(id: record.id, reference: record.reference, paymentURL: record.paymentURL,
                        notifyURL: record.provider == .citcon ? record.notifyURL : nil, expiresAtMs: record.expiresAtMs)
    }
}
