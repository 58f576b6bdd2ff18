import Entitlements
import Events
import ProviderAPIs
import Rejections
import Verifiers

/// Verifies what an app says it bought on Google Play, by asking the Play Developer API about the
/// purchase token (docs/purchases.md, "Google Play").
///
/// The claim does not say whether the token is a subscription's or a one-time product's, and Google's
/// two lookups are per kind: `purchases.subscriptionsv2.get` needs the token only and answers with the
/// subscription's products as line items, so it is asked first; a token it does not know (404, 400,
/// 410) is then looked up as a one-time purchase (`purchases.productsv2.getproductpurchasev2`, whose line
/// items must hold the claimed product; a rental's period from the Play catalog).
public struct GooglePurchaseVerifier: PurchaseVerifying {
    /// Nil when no Play Developer API credentials are configured: every Google claim is then refused.
    let client: PlayAPIClient?
    let packages: Set<String>
    /// Where the answers it read are kept for the projection of the events they produce (the enricher's).
    let reads: PlayPurchaseReads?
    let now: @Sendable () -> Int64

    /// When Google gives no `Retry-After` (a 429 without one, a 5xx, no answer at all).
    static let defaultRetryAfterSeconds = 30
    /// Google refunds a purchase not acknowledged within three days of its purchase.
    static let acknowledgementWindowMs: Int64 = 3 * 86_400_000

    public init(client: PlayAPIClient?, packages: [String], reads: PlayPurchaseReads? = nil,
                now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.client = client
        self.packages = Set(packages)
        self.reads = reads
        self.now = now
    }

    public func verify(_ claim: PurchaseClaim) async throws(Rejection) -> [VerifiedPurchase] {
        guard case .google(let packageName, let productId, let token) = claim else { return [] }
        guard packages.contains(packageName) else {
            throw Rejection(.unknownPackage, "packageName \(Self.printable(packageName)) is not configured (sources.google.packages)")
        }
        guard let client else {
            throw Rejection(.playAPINotConfigured,
                                  "Google purchases cannot be verified: no Play Developer API credentials (sources.google.playApi.credentialsFile)")
        }
        if let subscription = try await lookUp({ () async throws(PlayAPIError) in
            try await client.subscription(packageName: packageName, token: token)
        }) {
            guard let item = subscription.lineItems?.first(where: { $0.productId == productId }) else {
                throw Rejection(.purchaseNotFound, "the purchase token is a subscription to another product than \(Self.printable(productId))")
            }
            reads?.keep(subscription, packageName: packageName, token: token)
            return [subscriptionPurchase(subscription, item: item, packageName: packageName, productId: productId, token: token)]
        }
        guard let product = try await lookUp({ () async throws(PlayAPIError) in
            try await PlayProductRead.read(client, packageName: packageName, productId: productId, token: token)
        }) else {
            throw Rejection(.purchaseNotFound, "Google knows no purchase of \(Self.printable(productId)) in \(Self.printable(packageName)) with this purchase token")
        }
        reads?.keep(product, packageName: packageName, productId: productId, token: token)
        return [productPurchase(product, packageName: packageName, productId: productId, token: token)]
    }

    /// One lookup: the purchase, nil when Google does not know the token there, or the refusal its error makes.
    private func lookUp<Answer>(_ call: () async throws(PlayAPIError) -> Answer?) async throws(Rejection) -> Answer? {
        do {
            return try await call()
        } catch {
            if case .http(let status) = error.kind, status == 404 || status == 400 { return nil }
            // The client refuses a token that cannot be a path segment ("", ".", ".."): no purchase has it.
            if error.kind == .invalidArgument { return nil }
            // Transient or not (a 5xx, 429, no answer, refused credentials, an answer not as documented):
            // nothing is known about the purchase, so nothing is applied and the app asks again. The
            // message names the call and the kind of failure only: Google's text may quote the token.
            throw Rejection(.storeAPIUnavailable, "the Play Developer API did not answer usably (\(error.call.rawValue): \(error.kindLabel))",
                                  retryAfterSeconds: error.retryAfterSeconds ?? Self.defaultRetryAfterSeconds)
        }
    }

    func subscriptionPurchase(_ p: SubscriptionPurchaseV2, item: SubscriptionPurchaseV2.LineItem, packageName: String, productId: String,
                              token: String) -> VerifiedPurchase {
        let nowMs = now()
        // The state the projection will apply (its enricher takes this answer from `reads`, or asks again).
        let snapshot = GooglePlayEnricher.subscriptionSnapshot(p, nowMs: nowMs)
        let type: EventType = switch snapshot.state {
        case .active where p.subscriptionState == .canceled: .subscriptionAutoRenewDisabled
        case .active: .subscriptionStarted
        case .gracePeriod: .subscriptionBillingIssue
        case .onHold: .subscriptionOnHold
        case .paused: .subscriptionPaused
        case .expired: .subscriptionExpired
        case .canceled: .subscriptionPendingCanceled
        // Pending (awaiting payment) or a state Google added: stated as it is, entitling nothing.
        default: .subscriptionUpdated
        }
        let entitles = snapshot.state == .active || snapshot.state == .gracePeriod
        let startMs = p.startTime?.millisecondsSince1970
        var acknowledgement: PlayAcknowledgement?
        if entitles, p.acknowledgementState == "ACKNOWLEDGEMENT_STATE_PENDING" {
            acknowledgement = PlayAcknowledgement(kind: .subscription, packageName: packageName, productId: productId, purchaseToken: token,
                                                  deadlineMs: (startMs ?? nowMs) + Self.acknowledgementWindowMs)
        }
        let price = item.autoRenewingPlan?.recurringPrice.flatMap { money in
            money.amountMicros.map { NormalizedEvent.Price(amountMicros: $0, currency: money.currencyCode ?? "") }
        }
        var purchase = VerifiedPurchase(
            source: .google, app: packageName, environment: snapshot.environment ?? .production, subject: token, product: productId,
            kind: .subscription, type: type, occurredAt: Timestamp(millisecondsSince1970: nowMs),
            transaction: NormalizedEvent.Transaction(id: item.latestSuccessfulOrderId, purchasedAt: p.startTime?.rfc3339,
                                                     expiresAt: item.expiryTime?.rfc3339, offerId: item.offerDetails?.offerId),
            price: price,
            subscription: NormalizedEvent.Subscription(autoRenew: item.autoRenewingPlan.map { $0.autoRenewEnabled ?? false },
                                                       offerPhase: item.offerPhase?.name,
                                                       priceConsent: item.autoRenewingPlan?.priceStepUpConsentDetails?.state.flatMap(Self.consent),
                                                       replacedProduct: item.itemReplacement?.productId),
            acknowledgement: acknowledgement, owner: snapshot.user)
        purchase.record = .playSubscription(state: p.subscriptionState?.rawValue, acknowledgementState: p.acknowledgementState, regionCode: p.regionCode,
                                            lineItems: (p.lineItems ?? []).map { .init(productId: $0.productId, expiryTime: $0.expiryTime) })
        return purchase
    }

    func productPurchase(_ read: PlayProductRead, packageName: String, productId: String, token: String) -> VerifiedPurchase {
        let nowMs = now()
        let snapshot = read.snapshot
        let type: EventType = switch snapshot.state {
        case .active: .purchaseCompleted
        case .refunded: .purchaseRefunded
        case .canceled: .purchaseCanceled
        default: .purchasePending
        }
        let states = read.numberedStates
        var acknowledgement: PlayAcknowledgement?
        // Only a purchased one is acknowledged: Google refuses a pending purchase's acknowledgement.
        if states.purchase == 0, states.acknowledgement == 0 {
            acknowledgement = PlayAcknowledgement(kind: .product, packageName: packageName, productId: productId, purchaseToken: token,
                                                  deadlineMs: (read.purchase.purchaseCompletionTime?.millisecondsSince1970 ?? nowMs)
                                                      + Self.acknowledgementWindowMs)
        }
        var purchase = VerifiedPurchase(
            source: .google, app: packageName, environment: snapshot.environment ?? .production, subject: token, product: productId,
            kind: .oneTime, type: type, occurredAt: Timestamp(millisecondsSince1970: nowMs), transaction: read.transaction,
            acknowledgement: acknowledgement, owner: snapshot.user)
        purchase.record = .playProduct(purchaseState: states.purchase, consumptionState: states.consumption,
                                       acknowledgementState: states.acknowledgement, regionCode: read.purchase.regionCode)
        return purchase
    }

    /// A price step-up's consent state as events name it.
    static func consent(_ state: String) -> String? {
        switch state {
        case "PENDING": "pending"
        case "CONFIRMED": "confirmed"
        case "COMPLETED": "completed"
        default: nil
        }
    }

    /// A package or product id from the request: short and printable in messages, or not shown.
    static func printable(_ text: String) -> String {
        let printable = text.count <= 150 && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" }
        return printable ? "\"\(text)\"" : "(not printable)"
    }
}
