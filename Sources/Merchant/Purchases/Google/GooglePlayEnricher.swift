import Config
import Entitlements
import Events
import Logging
import ProviderAPIs
import Store
import Toolkit
import Verifiers

/// Google RTDN events say only that something happened to a purchase token: the state comes from the
/// Play Developer API (`purchases.subscriptionsv2.get`, `purchases.productsv2.getproductpurchasev2`), asked per event.
/// A push token is not bound to its message, so an event is a claim to check, never a fact: a voided
/// purchase counts only when `purchases.voidedpurchases.list` lists its token, and an end of a purchase
/// the API reports entitling is unconfirmed.
public struct GooglePlayEnricher: PurchaseEnricher {
    let client: PlayAPIClient
    /// What the purchase verifier read for the purchases apps report, taken by their events' enrichment.
    public let reads: PlayPurchaseReads
    var now: @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }

    public init(client: PlayAPIClient, reads: PlayPurchaseReads = PlayPurchaseReads()) {
        self.client = client
        self.reads = reads
    }

    /// The client, for the voided purchases backfill (`tollgate reconcile google`).
    public var playAPIClient: PlayAPIClient { client }

    /// The enricher `sources.google.playApi` describes, or nil when it names no credentials file.
    public init?(settings: GoogleSettings.PlayAPI, fetcher: any HTTPFetcher, logger: Logger) throws(ServiceAccountKeyError) {
        guard let path = settings.credentialsFile else { return nil }
        let key = try ServiceAccountKey.load(path: path)
        self.init(client: PlayAPIClient(key: key, baseURL: settings.baseURL, tokenURL: settings.tokenURL, fetcher: fetcher,
                                        timeout: .milliseconds(settings.timeoutMs), logger: logger))
    }

    /// Google keeps voided purchases for 30 days; the list is asked from a little after that horizon.
    static let voidedHorizonMs: Int64 = 30 * 86_400_000 - 3_600_000

    public func enrich(_ event: NormalizedEvent) async throws(WorkerFailure) -> Enrichment {
        // Another sender's, or news that changes no purchase (a refund review names an order): nothing to ask.
        guard Projector.sourceName(of: event) == GoogleSender.name.rawValue, event.type.concernsPurchases else { return .asSent }
        if event.type == .purchaseRefunded, !event.isReportedPurchase {
            // A voidedPurchaseNotification: true only if Google lists the token among the package's voids.
            do throws(PlayAPIError) {
                let nowMs = now()
                let claimedMs = [event.occurredAt, event.receivedAt].compactMap { Timestamp(rfc3339: $0)?.millisecondsSince1970 }.min() ?? nowMs
                let startMs = max(claimedMs - 86_400_000, nowMs - Self.voidedHorizonMs)
                guard try await client.isVoided(packageName: event.app, token: event.subject, orderId: event.transaction?.id,
                                                startTimeMillis: startMs) else {
                    return .unconfirmed(nil)
                }
                // A quantity-based partial refund takes some units: what productsv2 still counts as refundable keeps
                // entitling. (After a void, an absent count is none: Google leaves zeros out.)
                if event.reason == GoogleEventType.refundReason(2), let purchase = try await client.product(packageName: event.app, token: event.subject),
                   purchase.purchaseState == "PURCHASED", purchase.unitsHeld(afterVoid: true) > 0 {
                    return .state(PurchaseSnapshot(kind: .oneTime, state: .active,
                                                   environment: purchase.testPurchaseContext == nil ? .production : .sandbox,
                                                   quantity: purchase.unitsHeld(afterVoid: true)))
                }
                return .state(PurchaseSnapshot(kind: nil, state: .refunded))
            } catch {
                throw WorkerFailure(.playAPIError, message: "\(error)", isTransient: error.isTransient)
            }
        }
        guard let snapshot = try await snapshot(for: event) else {
            // Nothing to ask the API about (a one-time event that names no product): a claim that
            // changes a purchase is applied only as far as the API confirms it, so not at all.
            return event.type == .storeTest || event.type == .storeOther ? .asSent : .unconfirmed(nil)
        }
        // An event that ends the purchase while Google reports it entitling: the API's state holds.
        if Projector.ends(event.type), snapshot.state == .active || snapshot.state == .gracePeriod {
            return .unconfirmed(snapshot)
        }
        return .state(snapshot)
    }

    func snapshot(for event: NormalizedEvent) async throws(WorkerFailure) -> PurchaseSnapshot? {
        guard Projector.sourceName(of: event) == GoogleSender.name.rawValue, event.type != .storeTest, event.type != .storeOther else { return nil }
        do throws(PlayAPIError) {
            if event.type.rawValue.hasPrefix("subscription.") {
                var purchase = reads.takeSubscription(for: event)
                if purchase == nil { purchase = try await client.subscription(packageName: event.app, token: event.subject) }
                guard let purchase else {
                    // 410: the purchase ended long ago and Google no longer keeps it.
                    return PurchaseSnapshot(kind: .subscription, state: .expired)
                }
                return Self.subscriptionSnapshot(purchase, nowMs: now())
            }
            // A voided purchase says all there is to say (refunded); other one-time events, and a refund the
            // purchase service read from productsv2 itself, ask the API.
            guard event.type != .purchaseRefunded || event.isReportedPurchase, let productId = event.product else { return nil }
            var read = reads.takeProduct(for: event, productId: productId)
            if read == nil { read = try await PlayProductRead.read(client, packageName: event.app, productId: productId, token: event.subject) }
            guard let read else {
                // Gone (410), or a purchase of other products than the event names: nothing of this product is held.
                return PurchaseSnapshot(kind: .oneTime, state: .expired, product: productId)
            }
            return read.snapshot
        } catch {
            throw WorkerFailure(.playAPIError, message: "\(error)", isTransient: error.isTransient)
        }
    }

    static func subscriptionSnapshot(_ p: SubscriptionPurchaseV2, nowMs: Int64) -> PurchaseSnapshot {
        let expiresAtMs = p.latestExpiryTime?.millisecondsSince1970
        let state: PurchaseState
        switch p.subscriptionState?.rawValue {
        case "SUBSCRIPTION_STATE_ACTIVE": state = .active
        case "SUBSCRIPTION_STATE_IN_GRACE_PERIOD": state = .gracePeriod
        case "SUBSCRIPTION_STATE_ON_HOLD": state = .onHold
        case "SUBSCRIPTION_STATE_PAUSED": state = .paused
        // Canceled: auto-renew is off, access lasts until the paid period ends.
        case "SUBSCRIPTION_STATE_CANCELED": state = (expiresAtMs ?? 0) > nowMs ? .active : .expired
        case "SUBSCRIPTION_STATE_EXPIRED": state = .expired
        case "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED": state = .canceled
        default: state = .pending
        }
        let first = p.lineItems?.first
        // A re-subscription from the Play subscriptions center names its user by the expired purchase it follows.
        let user = p.externalAccountIdentifiers?.obfuscatedExternalAccountId
            ?? p.outOfAppPurchaseContext?.expiredExternalAccountIdentifiers?.obfuscatedExternalAccountId
        var snapshot = PurchaseSnapshot(kind: .subscription, state: state, user: user,
                                        product: first?.productId, expiresAtMs: expiresAtMs,
                                        autoRenew: first?.autoRenewingPlan?.autoRenewEnabled, linkedPurchaseToken: p.predecessorToken,
                                        // Google sets testPurchase (an empty object) only for a license tester's purchase.
                                        environment: p.testPurchase == nil ? .production : .sandbox)
        snapshot.orderId = first?.latestSuccessfulOrderId
        return snapshot
    }
}
