import Config
import Entitlements
import Events
import Kafka
import Logging
import Rejections
import Toolkit
import Verifiers

/// What `POST /v1/purchases` and `/v1/validate` do with a claim: the store verifies it, the ownership
/// policy decides between users, the purchase is published on `tollgate.events` as its store's event
/// with the user, and the answer waits (up to `purchases.waitMs`) for the projection to apply it. The
/// event goes the way every notification goes, so the store, the topics and every consumer see it alike.
public struct PurchaseService: Sendable {
    let verifiers: [any PurchaseVerifying]
    let store: EntitlementStore
    /// Where reported purchases are published (`tollgate.events`).
    let publisher: any EventPublisher
    let settings: PurchaseSettings
    let acknowledger: (any PlayAcknowledging)?
    /// Apple purchases' account tokens, set at Apple once linked (nil: no app has it on).
    var appAccountTokens: AppAccountTokens?
    /// The projection's signal in this process (nil: the store is polled).
    public var processedEvents: ProcessedEvents?
    let metrics: MerchantMetrics
    let logger: Logger
    var now: @Sendable () -> Timestamp = { Timestamp.now }

    /// What reporting a claim did.
    public struct Outcome: Sendable {
        public var purchases: [VerifiedPurchase]
        /// The events published for it (none when the store already says all of it).
        public var eventIds: [String]
        /// Whether every event was applied within the wait (else the answer is 202).
        public var applied: Bool
    }

    public init(verifiers: [any PurchaseVerifying], store: EntitlementStore, publisher: any EventPublisher, settings: PurchaseSettings,
         acknowledger: (any PlayAcknowledging)?, metrics: MerchantMetrics, logger: Logger) {
        self.verifiers = verifiers
        self.store = store
        self.publisher = publisher
        self.settings = settings
        self.acknowledger = acknowledger
        self.metrics = metrics
        self.logger = logger
    }

    public func report(_ claim: PurchaseClaim, app: String, user: String) async throws(Rejection) -> Outcome {
        let verified = try await verify(claim, app: app)
        var events: [NormalizedEvent] = []
        var purchases: [VerifiedPurchase] = []
        for purchase in verified {
            let key = PurchaseKey(source: purchase.source.rawValue, app: purchase.app, environment: purchase.environment.rawValue,
                                  subject: purchase.subject)
            // The stored purchase, and for an Apple copy naming no account token whose token Apple took, in one read.
            let stored: Purchase?
            let tokenHolder: String?
            do {
                (stored, tokenHolder) = try await store.purchaseAndTokenHolder(key, tokenHolder: purchase.source == .apple && purchase.owner == nil)
            } catch {
                logger.error("purchase lookup failed", metadata: ["error": .string("\(error)")])
                throw Rejection(.storeUnavailable, "the entitlement store cannot answer now", retryAfterSeconds: 5)
            }
            if let owner = try await owner(of: purchase, tokenHolder: tokenHolder), !owner.isExactly(user) {
                // Every notification of this purchase names its owner, so a link to anyone else would not hold.
                throw Rejection(.alreadyOwned, "the store names another user as this purchase's owner (appAccountToken / obfuscatedExternalAccountId)")
            }
            // Known now: refused at once. The projection decides again when the event applies, so a
            // claim racing this one cannot take the purchase either.
            if let holder = stored?.user, !holder.isExactly(user), settings.ownership(of: app) == .keep {
                throw Rejection(.alreadyOwned, "another user holds this purchase and \(app)'s ownership policy is keep")
            }
            purchases.append(Self.asStored(purchase, stored))
            let event = Self.event(for: purchase, user: user, stored: stored, receivedAt: now())
            if let stored, Self.changesNothing(event, stored) { continue }
            events.append(event)
        }
        let store = purchases[0].source.rawValue
        guard !events.isEmpty else {
            // The store holds the grant already: Google may still be owed its acknowledgement (a first
            // attempt that failed for good, or a purchase that came by notification).
            await acknowledge(purchases)
            await appAccountTokens?.link(purchases, to: user)
            metrics.purchaseReported(store: store, outcome: "unchanged")
            return Outcome(purchases: purchases, eventIds: [], applied: true)
        }
        let ids = events.map(\.id)
        // Registered before publishing, so the projection's signal is caught without asking the store.
        let expectation = processedEvents?.expect(ids)
        do { try await publishDurably(events) } catch {
            if let expectation { processedEvents?.cancel(expectation) }
            throw error
        }
        // Durable: the grant will happen, so Google may be told it was delivered.
        await acknowledge(purchases)
        let applied = await waitUntilApplied(ids, expectation)
        if applied, settings.ownership(of: app) == .keep { try await confirmHeld(purchases, by: user) }
        // Linked: Apple may be told whose it is.
        if applied { await appAccountTokens?.link(purchases, to: user) }
        metrics.purchaseReported(store: store, outcome: applied ? "applied" : "pending")
        return Outcome(purchases: purchases, eventIds: ids, applied: applied)
    }

    /// The user the store names for the purchase: an account token Tollgate made stands for its user, and a
    /// copy naming no token (signed before Apple took one) is the user Apple was told of.
    /// `tokenHolder`: what the store answered for a copy naming no token, when it was read already.
    func owner(of purchase: VerifiedPurchase, tokenHolder: String?? = nil) async throws(Rejection) -> String? {
        guard purchase.source == .apple else { return purchase.owner }
        do {
            guard let token = purchase.owner else {
                if let tokenHolder { return tokenHolder }
                return try await store.appAccountTokenHolder(app: purchase.app, environment: purchase.environment.rawValue,
                                                             originalTransactionId: purchase.subject)
            }
            return try await AppAccountTokens.user(named: token, app: purchase.app, store: store) ?? token
        } catch {
            logger.error("account token lookup failed", metadata: ["error": .string("\(error)")])
            throw Rejection(.storeUnavailable, "the entitlement store cannot answer now", retryAfterSeconds: 5)
        }
    }

    /// Under `keep`, the projection left a purchase with the user who held it when the event applied
    /// (another claim won the race): that is this claim's 409.
    private func confirmHeld(_ purchases: [VerifiedPurchase], by user: String) async throws(Rejection) {
        for purchase in purchases {
            let key = PurchaseKey(source: purchase.source.rawValue, app: purchase.app, environment: purchase.environment.rawValue,
                                  subject: purchase.subject)
            guard let holder = try? await store.purchase(key)?.user, !holder.isExactly(user) else { continue }
            metrics.purchaseReported(store: purchase.source.rawValue, outcome: "already_owned")
            throw Rejection(.alreadyOwned, "another user's claim of this purchase applied first and \(purchase.app)'s ownership policy is keep")
        }
    }

    private func acknowledge(_ purchases: [VerifiedPurchase]) async {
        guard let acknowledger else { return }
        for acknowledgement in purchases.compactMap(\.acknowledgement) { await acknowledger.acknowledge(acknowledgement) }
    }

    /// The purchase as the answer states it: where the store's own word on it (read before the claim is
    /// published) is newer than the claim and ends it (a refund, a revocation, an expiry), that word. A
    /// signed transaction saved before its refund is still Apple's signature, not a paid purchase.
    static func asStored(_ claimed: VerifiedPurchase, _ stored: Purchase?) -> VerifiedPurchase {
        guard let stored, stored.lastEventAtMs > claimed.occurredAt.millisecondsSince1970,
              let ended = endingType(stored, kind: claimed.kind) else { return claimed }
        var purchase = claimed
        purchase.type = ended
        if let expires = stored.expiresAtMs { purchase.transaction?.expiresAt = Timestamp(millisecondsSince1970: expires).rfc3339 }
        // The stored end is the store's later word: an older copy's partial refund no longer says what is held.
        purchase.transaction?.revocationType = nil
        purchase.transaction?.revocationPercentage = nil
        return purchase
    }

    /// The event type that states a stored purchase which no longer entitles; nil while it may.
    static func endingType(_ stored: Purchase, kind: VerifiedPurchase.Kind) -> EventType? {
        switch stored.state {
        case .refunded: .purchaseRefunded
        case .revoked: kind == .subscription ? .subscriptionRevoked : .purchaseRefunded
        case .canceled: .purchaseCanceled
        case .expired: .subscriptionExpired
        default: nil
        }
    }

    /// The purchases the claim proves, each for `app`; nothing is published.
    public func verify(_ claim: PurchaseClaim, app: String) async throws(Rejection) -> [VerifiedPurchase] {
        var purchases: [VerifiedPurchase] = []
        for verifier in verifiers { purchases += try await verifier.verify(claim) }
        guard !purchases.isEmpty else {
            if case .google = claim {
                throw Rejection(.unknownPackage, "Google purchases are verified with the Play Developer API, which is not configured (sources.google.playApi)")
            }
            throw Rejection(.purchaseNotFound, "the store confirms no purchase for this claim")
        }
        for purchase in purchases where purchase.app != app {
            throw Rejection(.purchaseNotFound, "the purchase is for another app than \(app)")
        }
        return purchases
    }

    /// Publishes on `tollgate.events`; returns once Kafka holds them.
    func publishDurably(_ events: [NormalizedEvent]) async throws(Rejection) {
        do {
            try await publisher.publish(events)
        } catch {
            logger.error("publishing a purchase's events failed", metadata: ["error": .string("\(error)")])
            throw Rejection(.notDurable, "the purchase could not be published now; nothing was applied", retryAfterSeconds: 5)
        }
    }

    /// Waits until every id is processed (by whichever replica consumes its partition), or the wait ends:
    /// told by this process's projection the moment it commits (`processedEvents`), and asking the store
    /// every 100 ms for what another replica's projection applied (at once too, unless the wait was
    /// registered before the events were published); without the signal, polling the store.
    func waitUntilApplied(_ ids: [String], _ expectation: ProcessedEvents.Expectation? = nil) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(settings.waitMs)
        if let processedEvents {
            let processedNow: @Sendable ([String]) async -> Set<String> = { [store] pending in
                (try? await store.processed(eventIds: pending)) ?? []
            }
            if let expectation {
                return await processedEvents.wait(expectation, until: deadline, pollEvery: .milliseconds(100), processedNow: processedNow)
            }
            return await processedEvents.wait(for: ids, until: deadline, pollEvery: .milliseconds(100), processedNow: processedNow)
        }
        var pending = ids
        var pause = Duration.milliseconds(5)
        while true {
            var still: [String] = []
            for id in pending where (try? await store.hasProcessed(eventId: id)) != true { still.append(id) }
            pending = still
            if pending.isEmpty { return true }
            if ContinuousClock.now + pause > deadline { return false }
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(25))
        }
    }

    /// The event a verified purchase is published as: its store's source, subject and vocabulary, the
    /// user, and an id that is the same for the same claim against the same stored state (a repeated
    /// request publishes nothing new) and new once the stored purchase moved on.
    static func event(for purchase: VerifiedPurchase, user: String?, stored: Purchase?, receivedAt: Timestamp) -> NormalizedEvent {
        let occurredAt = purchase.occurredAt.rfc3339
        let identity = [purchase.app, purchase.environment.rawValue, purchase.subject, user ?? "", stored?.lastEventId ?? "",
                        purchase.transaction?.id ?? "", purchase.type.rawValue, occurredAt].joined(separator: "\u{0}")
        let digest = Digest.hex(Array(Digest.sha256(identity).prefix(16)))
        return NormalizedEvent(
            id: "\(purchase.source.rawValue):purchase:\(digest)", type: purchase.type, source: "/\(purchase.source.rawValue)/\(purchase.app)",
            environment: purchase.environment, app: purchase.app, subject: purchase.subject, occurredAt: occurredAt,
            receivedAt: receivedAt.rfc3339, user: user, product: purchase.product, transaction: purchase.transaction,
            price: purchase.price, subscription: purchase.subscription, sourceType: NormalizedEvent.reportedPurchaseSourceType)
    }

    /// Whether the stored purchase already says what the event would: same user, and applying the event
    /// would change none of its state.
    static func changesNothing(_ event: NormalizedEvent, _ stored: Purchase) -> Bool {
        if stored.user != nil || event.user != nil {
            guard let storedUser = stored.user, let eventUser = event.user, storedUser.isExactly(eventUser) else { return false }
        }
        guard let change = Projector.change(for: event), let next = change.update(stored) else { return true }
        return next.state == stored.state && next.product == stored.product && next.expiresAtMs == stored.expiresAtMs
            && next.kind == stored.kind && next.gracePeriodExpiresAtMs == stored.gracePeriodExpiresAtMs && next.autoRenew == stored.autoRenew
            && next.quantity == stored.quantity && next.appTransactionId == stored.appTransactionId
    }
}
