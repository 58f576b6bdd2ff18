import Config
import Entitlements
import Events
import Foundation
import Logging
import CoreMetrics
import Rejections
import Store
import Toolkit
import Verifiers

/// What checkouts need from the configuration, read (keys included) when the workers start, so a
/// missing key file stops the start with its configuration key.
public struct CheckoutSetup: Sendable {
    let settings: CheckoutSettings
    /// Every provider of the catalog, its accounts read.
    let providers: ConfiguredCheckoutProviders
    /// Makes the providers' calls.
    let fetcher: any HTTPFetcher

    public static func make(config: TollgateConfig, fetcher: any HTTPFetcher,
                            catalog: CheckoutProviderCatalog = .standard) throws(ConfigError) -> CheckoutSetup {
        CheckoutSetup(settings: config.checkouts, providers: try catalog.readAccounts(config), fetcher: fetcher)
    }

    /// The environment a checkout of `provider` under `account` is kept in, or why none could start
    /// (`provider_not_configured`): what a Sileo vendor is checked against at start.
    public func environment(provider: String, account: String) throws(Rejection) -> NormalizedEvent.Environment {
        guard settings.publicBaseURL != nil else {
            throw Rejection(.providerNotConfigured, "checkouts.publicBaseURL is not set, so no notification URL can be given")
        }
        let context = CheckoutProviderContext(settings: settings, fetcher: fetcher, metricsFactory: NOOPMetricsHandler.instance,
                                              logger: Logger(label: "tollgate.checkouts"), now: { 0 })
        guard let named = providers.providers(context)[provider] else {
            throw Rejection(.providerNotConfigured, "\(provider) is not a checkout provider")
        }
        return try named.environment(account: account)
    }
}

/// Records a checkout and starts its payment (docs/checkouts.md) through the provider it names
/// (`CheckoutProvider`). The checkout's `app` names the provider account its notification comes back
/// under (the Alipay+ client id or the Citcon account name), which is the `app` the entitlement is kept
/// under. The row is written pending, then the provider starts the payment; on any failure the row is
/// deleted, so no checkout is left half-made. A provider whose app places the order itself (Citcon)
/// answers the reference and notification URL to put in it. A paid checkout is refunded through
/// `refund`, where its provider takes refunds: the provider's answer or its refund notification then
/// takes it back.
public struct CheckoutService: CheckoutStarting {
    let setup: CheckoutSetup
    let providers: CheckoutProviders
    let records: CheckoutRecords
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64
    /// Publishes the refund a provider's answer reports done on `tollgate.events`; nil: none is.
    let publisher: (any EventPublisher)?

    public init(setup: CheckoutSetup, store: EntitlementStore, metrics: MerchantMetrics, logger: Logger,
         now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 },
         publisher: (any EventPublisher)? = nil) {
        self.publisher = publisher
        self.setup = setup
        providers = setup.providers.providers(CheckoutProviderContext(settings: setup.settings, fetcher: setup.fetcher,
                                                                      metricsFactory: metrics.factory, logger: logger, now: now))
        records = CheckoutRecords(store: store)
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// The provider `name` names and the environment of its account `app`, or why none can take a checkout.
    func account(provider name: SourceName, app: String) throws(Rejection) -> (provider: any CheckoutProvider, environment: NormalizedEvent.Environment) {
        guard let provider = providers[name] else {
            throw Rejection(.invalidField, "provider must be \(providers.namesText)")
        }
        guard setup.settings.publicBaseURL != nil else {
            throw Rejection(.providerNotConfigured, "checkouts.publicBaseURL is not set, so no notification URL can be given")
        }
        return (provider, try provider.environment(account: app))
    }

    public func start(_ intent: CheckoutIntent) async throws(Rejection) -> StartedCheckout {
        try await startOrRepeat(intent).checkout
    }

    /// The checkout started, or the same pending one again when this user already asked for this
    /// product with this amount (`repeated`); 409 when the pending one differs.
    func startOrRepeat(_ intent: CheckoutIntent) async throws(Rejection) -> (checkout: StartedCheckout, record: CheckoutRecord, repeated: Bool) {
        let (provider, environment) = try account(provider: intent.provider, app: intent.app)
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
            if provider.appPlacesOrder || existing.paymentURL != nil {
                metrics.checkoutStarted(provider: intent.provider.rawValue, outcome: "repeated")
                return (started(existing), existing, true)
            }
        }
        var record = CheckoutRecord(
            id: "co_" + Self.randomHex(16), app: intent.app, user: intent.user, product: intent.product, amountMinor: intent.amountMinor,
            currency: intent.currency, provider: intent.provider, account: intent.app, reference: "tg" + Self.randomHex(15),
            environment: environment, state: .pending, paymentURL: nil,
            notifyURL: provider.notifyURL(account: intent.app, publicBase: setup.settings.publicBaseURL ?? ""),
            createdAtMs: nowMs, expiresAtMs: nowMs + Int64(setup.settings.expirySeconds) * 1000, paidEventId: nil)
        do throws(StoreError) { try await records.insert(record) } catch { throw storeUnavailable(error) }

        let page: String?
        do throws(Rejection) {
            page = try await provider.startPayment(record)
        } catch {
            await removeHalfMade(record.id)
            metrics.checkoutStarted(provider: intent.provider.rawValue, outcome: error.is(CheckoutReason.paymentRefused) ? "refused" : "unavailable")
            throw error
        }
        if let page {
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
        return (started(record), record, false)
    }

    /// Asks the checkout's provider to refund a paid checkout in full (`POST /v1/checkouts/{id}/refund`).
    /// The `refundRequestId` is recorded before the call, so the notification finds the checkout even
    /// when it overtakes the answer, and kept until the refund ends, so asking again (after a 503) repeats
    /// the same request, which the provider's idempotency refunds at most once (Antom's does). A refund
    /// the answer reports done is published as the event the provider's notification would give (same
    /// id), so the refund applies even if the notification never comes; until the projection applies it
    /// the checkout stays `paid`. True when the refund is under way, false when the checkout was already
    /// refunded.
    func refund(_ checkout: CheckoutRecord) async throws(Rejection) -> Bool {
        if checkout.state == .refunded { return false }
        guard checkout.state == .paid else {
            throw Rejection(.checkoutNotRefundable, "the checkout is \(checkout.state.rawValue); only a paid checkout can be refunded")
        }
        guard let provider = providers[checkout.provider] else {
            throw Rejection(.providerNotConfigured, "no provider \(checkout.provider.rawValue) takes checkouts here")
        }
        try provider.checkRefundable(checkout)
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
        switch await provider.refund(checkout, refundRequestId: refundRequestId) {
        case .refunded(let event):
            metrics.checkoutRefund(outcome: "refunded")
            logger.info("checkout refunded by the provider's answer", metadata: ["checkout": .string(checkout.id)])
            if let event { await publishRefund(event, checkout: checkout) }
            return true
        case .inProcess:
            metrics.checkoutRefund(outcome: "requested")
            logger.info("checkout refund requested", metadata: ["checkout": .string(checkout.id)])
            return true
        case .refused(let code):
            metrics.checkoutRefund(outcome: "refused")
            // The same request id is answered with the same refusal, so a later request needs a new one.
            do throws(StoreError) {
                try await records.clearRefundRequest(refundRequestId, id: checkout.id, nowMs: now())
            } catch {
                logger.error("a refused refund request could not be cleared", metadata: ["checkout": .string(checkout.id)])
            }
            throw Rejection(.refundRefused, "\(provider.displayName) refused the refund: \(code)")
        case .unavailable:
            metrics.checkoutRefund(outcome: "unavailable")
            throw Rejection(.paymentProviderUnavailable, "\(provider.displayName) cannot take the refund now; ask again", retryAfterSeconds: 30)
        }
    }

    /// A failure here only leaves the refund to the provider's notification.
    private func publishRefund(_ event: NormalizedEvent, checkout: CheckoutRecord) async {
        guard let publisher else { return }
        do {
            try await publisher.publish([event])
        } catch {
            logger.warning("the refund the provider answered could not be published; its notification will apply it",
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

    /// A checkout as its starter answers it: the notification URL only where the app places the order.
    func started(_ record: CheckoutRecord) -> StartedCheckout {
        StartedCheckout(id: record.id, reference: record.reference, paymentURL: record.paymentURL,
                        notifyURL: appPlacesOrder(record) ? record.notifyURL : nil, expiresAtMs: record.expiresAtMs)
    }

    /// Whether the app places the order for this checkout, with the notification URL Tollgate gave it.
    func appPlacesOrder(_ record: CheckoutRecord) -> Bool { providers[record.provider]?.appPlacesOrder ?? false }
}
