import Store

/// The entitlement refreshes of a batch replayed in memory, step by step in the order the changes made
/// them, so the outbox gets the same changes (and event ids) as applying one change per transaction.
/// Candidates come from the store, overlaid with the batch's own purchases as they stand at each step.
struct EntitlementReplay {
    /// The batch's purchases (loaded or written) as of the current step: these win over stored rows.
    private var purchases: [PurchaseKey: Purchase]
    /// Which of `purchases` count towards each entitlement now.
    private var members: [EntitlementKey: Set<PurchaseKey>] = [:]
    /// The stored candidates of each touched entitlement.
    private let stored: [EntitlementKey: [Purchase]]
    private var entitlements: [EntitlementKey: Entitlement]
    private var savedAt: [EntitlementKey: Int] = [:]
    /// Every entitlement saved, in its final state, in the order first saved.
    private(set) var saved: [Entitlement] = []
    private(set) var outbox: [OutboxEntry] = []

    init(purchases: [PurchaseKey: Purchase], candidates: [Purchase], entitlements: [EntitlementKey: Entitlement]) {
        self.purchases = purchases
        self.entitlements = entitlements
        var stored: [EntitlementKey: [Purchase]] = [:]
        for purchase in candidates {
            for key in EntitlementKey.of(purchase) { stored[key, default: []].append(purchase) }
        }
        self.stored = stored
        for purchase in purchases.values {
            for key in EntitlementKey.of(purchase) { members[key, default: []].insert(purchase.key) }
        }
    }

    mutating func run(_ steps: [BatchPlan.Step], nowMs: Int64) {
        for step in steps {
            for purchase in step.writes { write(purchase) }
            for key in step.touched { refresh(key, eventId: step.eventId, nowMs: nowMs) }
        }
    }

    private mutating func write(_ purchase: Purchase) {
        if let old = purchases[purchase.key] {
            for key in EntitlementKey.of(old) { members[key]?.remove(old.key) }
        }
        purchases[purchase.key] = purchase
        for key in EntitlementKey.of(purchase) { members[key, default: []].insert(purchase.key) }
    }

    /// Every purchase of the entitlement as of this step, in key order (so ties decide alike every time).
    private func candidates(_ key: EntitlementKey) -> [Purchase] {
        var found = (stored[key] ?? []).filter { purchases[$0.key] == nil }
        found += (members[key] ?? []).compactMap { purchases[$0] }
        return found.sorted { ($0.key.source, $0.key.subject) < ($1.key.source, $1.key.subject) }
    }

    /// Recomputes one entitlement from its purchases; when it changed, saves it and queues the change.
    private mutating func refresh(_ key: EntitlementKey, eventId: String, nowMs: Int64) {
        let current = entitlements[key]
        guard let decider = EntitlementRows.decidingPurchase(candidates(key), atMs: nowMs) else {
            // Its purchases moved to another user or product: it ends here.
            guard var ended = current, ended.state != .superseded else { return }
            ended.state = .superseded
            save(ended, key: key)
            outbox.append(OutboxEntry(entitlement: ended, active: false, eventId: eventId))
            return
        }
        let next = Entitlement(deciding: decider, user: key.user, product: key.product)
        guard next != current else { return }
        save(next, key: key)
        outbox.append(OutboxEntry(entitlement: next, active: next.isActive(atMs: nowMs), eventId: eventId))
    }

    private mutating func save(_ entitlement: Entitlement, key: EntitlementKey) {
        entitlements[key] = entitlement
        if let index = savedAt[key] {
            saved[index] = entitlement
        } else {
            savedAt[key] = saved.count
            saved.append(entitlement)
        }
    }
}
