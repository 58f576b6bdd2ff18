import Events

/// Who keeps a purchase that a second user reports (`purchases.ownership`), decided here, where the
/// event applies: two first claims racing each other cannot both win.
public enum OwnershipPolicy: String, Sendable, Equatable {
    /// The new user gets it and the old one loses it (as a store's "restore purchases" works).
    case transfer
    /// The user holding it keeps it; a report by anyone else changes nothing.
    case keep
}

/// Turns one normalized event into its change of one purchase. Pure: the store applies the change in
/// its transaction, with the stored state as input.
public enum Projector {
    /// The change `event` makes, or nil when it concerns no purchase (tests, unmapped notifications).
    /// `snapshot` is the purchase's state as the sender's API reports it now (Google), which wins.
    /// `ownership` is the app's policy for a purchase its app reports for another user than its holder.
    public static func change(for event: NormalizedEvent, snapshot: PurchaseSnapshot? = nil,
                              ownership: OwnershipPolicy = .transfer) -> PurchaseChange? {
        guard event.type.concernsPurchases, event.type != .storeOther || snapshot != nil else { return nil }
        // The sender's API knows better than the notification whether a purchase is a test (Google's
        // testPurchase / purchaseType), so its environment wins.
        let environment = snapshot?.environment?.rawValue ?? event.environment.rawValue
        let key = purchaseKey(of: event, environment: environment)
        let occurredAtMs = Timestamp(rfc3339: event.occurredAt)?.millisecondsSince1970 ?? 0
        if let snapshot {
            // The event's claimed time cannot be later than its arrival: a forged future time must not
            // hold back later events.
            let receivedAtMs = Timestamp(rfc3339: event.receivedAt)?.millisecondsSince1970 ?? occurredAtMs
            let eventAtMs = min(occurredAtMs, receivedAtMs)
            return PurchaseChange(eventId: event.id, key: key, supersedes: snapshot.linkedPurchaseToken) { current in
                if Self.keeps(current, from: event, ownership) { return nil }
                var next = current ?? Purchase(key: key, kind: snapshot.kind ?? kind(of: event), state: snapshot.state,
                                               lastEventAtMs: eventAtMs, lastEventId: event.id, lastEventType: event.type.rawValue)
                // The API answers with the state as of now, newer than any event, so it is applied whatever the order.
                // The event's own word (revoked, on hold, ...) is kept only where the API agrees the purchase does not
                // entitle: an event alone is a claim anyone holding a push token can make.
                let entitlesNow = snapshot.state == .active || snapshot.state == .gracePeriod
                next.state = entitlesNow ? snapshot.state : forcedState(event.type) ?? snapshot.state
                // Entitling again (the API's word is final): units an end set to none are not known any more.
                if entitlesNow, next.quantity == 0 { next.quantity = nil }
                if let units = snapshot.quantity { next.quantity = units }
                next.kind = snapshot.kind ?? next.kind
                next.expiresAtMs = snapshot.expiresAtMs ?? next.expiresAtMs
                next.gracePeriodExpiresAtMs = nil
                next.autoRenew = snapshot.autoRenew ?? next.autoRenew
                next.user = snapshot.user ?? event.user ?? next.user
                next.product = snapshot.product ?? event.product ?? next.product
                next.lastEventAtMs = max(next.lastEventAtMs, eventAtMs)
                next.lastEventId = event.id
                next.lastEventType = event.type.rawValue
                Self.settleUnits(&next)
                return next
            }
        }
        return PurchaseChange(eventId: event.id, key: key) { current in
            if Self.keeps(current, from: event, ownership) { return nil }
            // Order safety: an event older than what is stored must not roll the state back. A purchase
            // its app reported still links its user: the link is not a state the store's later word replaces.
            if let current, current.lastEventAtMs > occurredAtMs {
                guard event.isReportedPurchase, let user = event.user, !(current.user?.isExactly(user) ?? false) else { return nil }
                var linked = current
                linked.user = user
                linked.lastEventId = event.id
                return linked
            }
            var next = current ?? Purchase(key: key, kind: kind(of: event), state: hintedState(event) ?? .active, lastEventAtMs: occurredAtMs,
                                           lastEventId: event.id, lastEventType: event.type.rawValue)
            apply(event, to: &next)
            settleUnits(&next)
            next.lastEventAtMs = occurredAtMs
            next.lastEventId = event.id
            next.lastEventType = event.type.rawValue
            return next
        }
    }

    /// Whether the purchase stays with its holder: `keep`, and an app reported it for someone else.
    /// (A store's own notification naming a user is the store's word, not a claim.)
    static func keeps(_ current: Purchase?, from event: NormalizedEvent, _ ownership: OwnershipPolicy) -> Bool {
        guard ownership == .keep, event.isReportedPurchase, let holder = current?.user, let claimant = event.user else { return false }
        return !holder.isExactly(claimant)
    }

    private static func apply(_ event: NormalizedEvent, to p: inout Purchase) {
        if let user = event.user { p.user = user }
        if let product = event.product { p.product = product }
        if let expires = event.transaction?.expiresAt.flatMap(Timestamp.init(rfc3339:)) {
            p.expiresAtMs = expires.millisecondsSince1970
        }
        if let autoRenew = event.subscription?.autoRenew { p.autoRenew = autoRenew }
        // The units the transaction holds as its store states it now (any later notification about it
        // carries its refunds too), so no event can give back what a refund took.
        if let units = event.transaction.flatMap(unitsHeld) { p.quantity = units }
        if let appTransactionId = event.transaction?.appTransactionId { p.appTransactionId = appTransactionId }
        switch event.type {
        case .subscriptionStarted, .subscriptionResubscribed, .subscriptionRenewed, .subscriptionRecovered,
             .subscriptionExtended, .subscriptionOfferRedeemed:
            p.state = .active
            p.gracePeriodExpiresAtMs = nil
        case .subscriptionBillingIssue:
            if let grace = event.subscription?.gracePeriodExpiresAt.flatMap(Timestamp.init(rfc3339:)) {
                p.state = .gracePeriod
                p.gracePeriodExpiresAtMs = grace.millisecondsSince1970
            } else {
                p.state = .billingRetry
            }
        case .subscriptionAutoRenewDisabled: p.autoRenew = false
        case .subscriptionAutoRenewEnabled: p.autoRenew = true
        case .purchaseCompleted: p.state = .active
        case .purchaseRefundReversed:
            p.state = .active
            // Restored in full: without the transaction's word on its units, they are not known.
            if event.transaction.flatMap(unitsHeld) == nil { p.quantity = nil }
        case .purchaseRefunded:
            if let transaction = event.transaction, keepsUnits(after: transaction, kind: p.kind) {
                // A share taken back: what remains still entitles, in the state it had.
                break
            }
            p.state = .refunded
            if p.quantity != nil { p.quantity = 0 }
        default:
            if let forced = forcedState(event.type) {
                p.state = forced
            } else if let hinted = hintedState(event) {
                // Snapshots (Iaptic) and informational types keep the state the sender reports, if any.
                p.state = hinted
            }
        }
    }

    /// A purchase refunded or revoked (a chargeback, a family revoke, a voided Google purchase) holds no units.
    static func settleUnits(_ purchase: inout Purchase) {
        if purchase.state == .refunded || purchase.state == .revoked, purchase.quantity != nil { purchase.quantity = 0 }
    }

    /// The units a transaction holds: its quantity (1 to 1,000,000; another figure says nothing), less
    /// the share a prorated refund took back, rounded to whole units (Apple's percentage is of the whole
    /// quantity: 1 of 3 is 33.333%), none once refunded in full or revoked from a family member.
    public static func unitsHeld(_ transaction: NormalizedEvent.Transaction) -> Int? {
        guard let quantity = transaction.quantity, (1...1_000_000).contains(quantity) else { return nil }
        switch transaction.revocationType {
        case nil: return quantity - min(quantity, max(0, transaction.refundedQuantity ?? 0))
        case .refundFull, .familyRevoke: return 0
        case .refundProrated:
            guard let share = transaction.revocationPercentage, (0...100_000).contains(share) else { return 0 }
            return quantity - (quantity * share + 50_000) / 100_000
        }
    }

    /// Whether a refund leaves the purchase entitling: a prorated one of a one-time purchase or of several
    /// units that leaves units. A subscription's prorated refund is of the time it had left: it ends.
    public static func keepsUnits(after transaction: NormalizedEvent.Transaction, kind: Purchase.Kind) -> Bool {
        guard transaction.revocationType == .refundProrated, let units = unitsHeld(transaction), units > 0 else { return false }
        return kind == .oneTime || (transaction.quantity ?? 1) > 1
    }

    /// Whether an event of this type ends or suspends a purchase (its type alone says so).
    public static func ends(_ type: EventType) -> Bool {
        guard let state = forcedState(type) else { return false }
        return state != .pending
    }

    /// States an event type decides on its own.
    private static func forcedState(_ type: EventType) -> PurchaseState? {
        switch type {
        case .subscriptionExpired: .expired
        case .subscriptionRevoked, .purchaseChargeback: .revoked
        case .purchaseRefunded: .refunded
        case .subscriptionOnHold: .onHold
        case .subscriptionPaused: .paused
        case .subscriptionPendingCanceled, .purchaseCanceled: .canceled
        case .purchaseFailed: .failed
        case .purchaseAuthorized, .purchasePending: .pending
        default: nil
        }
    }

    /// The sender's own state word (`subscription.state`), in the store's vocabulary.
    private static func hintedState(_ event: NormalizedEvent) -> PurchaseState? {
        switch event.subscription?.state {
        case "active": .active
        case "expired": .expired
        case "billing_retry": .billingRetry
        case "grace_period": .gracePeriod
        case "revoked": .revoked
        default: nil
        }
    }

    private static func kind(of event: NormalizedEvent) -> Purchase.Kind {
        event.type.rawValue.hasPrefix("subscription.") || event.transaction?.expiresAt != nil ? .subscription : .oneTime
    }

    /// The purchase `event` names, in the environment `environment` (the event's own unless given).
    public static func purchaseKey(of event: NormalizedEvent, environment: String? = nil) -> PurchaseKey {
        PurchaseKey(source: sourceName(of: event), app: event.app, environment: environment ?? event.environment.rawValue, subject: event.subject)
    }

    /// `/apple/<bundleId>` -> `apple`.
    public static func sourceName(of event: NormalizedEvent) -> String {
        event.source.split(separator: "/").first.map(String.init) ?? event.source
    }
}

/// A purchase's state as the sender's API reports it (Google Play Developer API).
public struct PurchaseSnapshot: Sendable, Equatable {
    /// Nil when the API does not say (a voided purchase): the stored kind holds.
    public var kind: Purchase.Kind?
    public var state: PurchaseState
    public var user: String?
    public var product: String?
    public var expiresAtMs: Int64?
    public var autoRenew: Bool?
    /// The purchase this one replaced (upgrade, downgrade, resubscribe).
    public var linkedPurchaseToken: String?
    /// Whether the API calls it a test purchase; nil when it does not say (the event's environment then holds).
    public var environment: NormalizedEvent.Environment?
    /// The units held, as the API states them (Google's `refundableQuantity`); nil when it does not say.
    public var quantity: Int?
    /// The order the API names (Google's latest successful order, a one-time purchase's order): kept in the
    /// purchase's history, where the console's search finds it, for events that name none (a push names none).
    public var orderId: String?

    public init(kind: Purchase.Kind?, state: PurchaseState, user: String? = nil, product: String? = nil,
                expiresAtMs: Int64? = nil, autoRenew: Bool? = nil, linkedPurchaseToken: String? = nil,
                environment: NormalizedEvent.Environment? = nil, quantity: Int? = nil) {
        self.quantity = quantity
        self.kind = kind
        self.state = state
        self.user = user
        self.product = product
        self.expiresAtMs = expiresAtMs
        self.autoRenew = autoRenew
        self.linkedPurchaseToken = linkedPurchaseToken
        self.environment = environment
    }
}
