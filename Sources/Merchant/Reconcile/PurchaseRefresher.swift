import Entitlements
import Events
import Logging
import Rejections
import Verifiers

/// Re-reads a stored purchase from its store and publishes what changed, the way a reported purchase
/// is published: the store's verifier reads it (Apple: Get Transaction Info of the original transaction,
/// then Get All Subscription Statuses for a subscription; Google: `subscriptionsv2`, else `productsv2`),
/// the event goes on `tollgate.events` with the purchase's user and the projection applies it. Nothing
/// is published when the store says what the store here says already. `POST /v1/purchases/{purchase}/refresh`
/// and the at-risk refresh share it (docs/reconciliation.md).
public struct PurchaseRefresher: Sendable {
    public enum Trigger: String, Sendable { case api, atRisk = "at_risk", console }

    public struct Refreshed: Sendable {
        /// The purchase as the store here held it when it was read.
        public var stored: Purchase
        /// What its store says now.
        public var purchase: VerifiedPurchase
        /// The event published for it; nil when it changed nothing.
        public var eventId: String?
        /// Whether the event was applied within `purchases.waitMs` (true when none was needed).
        public var applied: Bool
    }

    let service: PurchaseService
    let metrics: MerchantMetrics
    let logger: Logger

    /// The stores whose purchases can be read back.
    public static let sources: [SourceName] = [.apple, .google]

    /// The claim that reads the purchase back from its store; nil for a store without one.
    static func claim(for stored: Purchase) -> PurchaseClaim? {
        switch stored.key.source {
        case SourceName.apple.rawValue: .appleTransactionId(stored.key.subject, bundleId: stored.key.app)
        case SourceName.google.rawValue: .google(packageName: stored.key.app, productId: stored.product ?? "", purchaseToken: stored.key.subject)
        default: nil
        }
    }

    /// The store API calls one read of `stored` makes at most: Apple's transaction (production first, so a
    /// sandbox purchase costs one more) and a subscription's statuses; Google's subscriptionsv2, then
    /// productsv2 for a one-time purchase, and the catalog for a rental.
    static func calls(for stored: Purchase) -> Int {
        let sandbox = stored.key.environment == NormalizedEvent.Environment.sandbox.rawValue
        switch stored.key.source {
        case SourceName.apple.rawValue: return (stored.kind == .subscription ? 2 : 1) + (sandbox ? 1 : 0)
        default: return stored.kind == .subscription ? 1 : 3
        }
    }

    /// `waits`: whether the answer waits (up to `purchases.waitMs`) for the projection to apply the event.
    /// Why a purchase of a store without an API to read it from is not refreshed.
    static func unsupported(_ stored: Purchase) -> Rejection {
        Rejection(.refreshNotSupported, "\(stored.key.source) purchases are told by their notifications; there is no store API to read them from")
    }

    public func refresh(_ stored: Purchase, trigger: Trigger, nowMs: Int64, waits: Bool = true) async throws(Rejection) -> Refreshed {
        let store = stored.key.source
        do {
            let refreshed = try await read(stored, waits: waits)
            metrics.purchaseRefreshed(store: store, trigger: trigger.rawValue, outcome: refreshed.eventId == nil ? "unchanged" : "changed")
            try? await service.store.recordRefresh(stored.key, outcome: refreshed.eventId == nil ? "unchanged" : "changed", nowMs: nowMs)
            await noteCall(stored.key, outcome: refreshed.eventId == nil ? "unchanged" : "changed", trigger: trigger, nowMs: nowMs)
            return refreshed
        } catch {
            let outcome = if error.is(PurchaseReason.purchaseNotFound) { "not_found" }
                else if error.is(PurchaseReason.storeAPIUnavailable) { "store_error" }
                else { "not_refreshed" }
            metrics.purchaseRefreshed(store: store, trigger: trigger.rawValue, outcome: outcome)
            try? await service.store.recordRefresh(stored.key, outcome: outcome, nowMs: nowMs)
            await noteCall(stored.key, outcome: outcome, trigger: trigger, nowMs: nowMs)
            throw error
        }
    }

    /// The refresh in the purchase's story (the console's).
    private func noteCall(_ key: PurchaseKey, outcome: String, trigger: Trigger, nowMs: Int64) async {
        await service.store.noteStoreCall("refresh", source: key.source, app: key.app, subject: key.subject, environment: key.environment,
                                          outcome: outcome, detail: "asked by \(trigger.rawValue)", nowMs: nowMs)
    }

    private func read(_ stored: Purchase, waits: Bool) async throws(Rejection) -> Refreshed {
        guard let claim = Self.claim(for: stored) else {
            throw Self.unsupported(stored)
        }
        let verified = try await service.verify(claim, app: stored.key.app)
        // The store's answer for this very purchase: the same subject in the same environment.
        guard let purchase = verified.first(where: {
            $0.subject.isExactly(stored.key.subject) && $0.environment.rawValue == stored.key.environment
        }) else {
            throw Rejection(.purchaseNotFound, "the store's answer is for another purchase or environment")
        }
        // Nothing new when the store says what the store here holds, for the user it holds it for.
        if PurchaseService.changesNothing(PurchaseService.event(for: purchase, user: stored.user, stored: stored, receivedAt: service.now()), stored) {
            return Refreshed(stored: stored, purchase: purchase, eventId: nil, applied: true)
        }
        // The store's word on the purchase, claiming it for nobody: a refresh must not undo a transfer that
        // committed after it read the stored purchase. Only a purchase no user holds takes the owner the store names.
        let user = stored.user == nil ? try await service.owner(of: purchase) : nil
        let event = PurchaseService.event(for: purchase, user: user, stored: stored, receivedAt: service.now())
        try await service.publishDurably([event])
        logger.info("purchase refreshed from its store", metadata: [
            "store": .string(stored.key.source), "app": .string(stored.key.app), "event_id": .string(event.id),
            "type": .string(event.type.rawValue),
        ])
        let applied = waits ? await service.waitUntilApplied([event.id]) : false
        return Refreshed(stored: stored, purchase: purchase, eventId: event.id, applied: applied)
    }
}
