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
    private var entitlements: [EntitlementKey: EntitlementRow]
    private var savedAt: [EntitlementKey: Int] = [:]
    /// Every entitlement saved, in its final state, in the order first saved.
    private(set) var saved: [EntitlementRow] = []
    private(set) var outbox: [OutboxEntry] = []
    /// Each step's event with every entitlement it touched, as it stands after the step (steps with an event only).
    private(set) var applied: [AppliedEvent] = []

    init(purchases: [PurchaseKey: Purchase], candidates: [Purchase], entitlements: [EntitlementKey: EntitlementRow]) {
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
            for key in step.touched {
                refresh(key, eventId: step.eventId, transfer: step.transfer, nowMs: nowMs)
                if let event = step.event, let row = entitlements[key] {
                    applied.append(AppliedEvent(event: event, entitlement: row.entitlement, active: row.active,
                                                transferredFrom: step.transfer.flatMap { $0.to == key.user ? $0.from : nil },
                                                transferredTo: step.transfer.flatMap { $0.from == key.user ? $0.to : nil }))
                }
            }
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

    /// Recomputes one entitlement from its purchases; when it changed, or time alone ended it (an expiry
    /// or grace period passed since its last change), saves it and queues the change.
    private mutating func refresh(_ key: EntitlementKey, eventId: String, transfer: (from: String, to: String)?, nowMs: Int64) {
        // A purchase that moved names the other side on each user's change.
        let from = transfer.flatMap { $0.to == key.user ? $0.from : nil }
        let to = transfer.flatMap { $0.from == key.user ? $0.to : nil }
        let current = entitlements[key]
        guard let decider = EntitlementRows.decidingPurchase(candidates(key), atMs: nowMs) else {
            // Its purchases moved to another user or product: it ends here.
            guard var ended = current?.entitlement, ended.state != .superseded else { return }
            ended.state = .superseded
            save(EntitlementRow(entitlement: ended, active: false), key: key)
            outbox.append(OutboxEntry(entitlement: ended, active: false, eventId: eventId, transferredFrom: from, transferredTo: to))
            return
        }
        let entitlement = Entitlement(deciding: decider, user: key.user, product: key.product)
        let row = EntitlementRow(entitlement: entitlement, active: entitlement.isActive(atMs: nowMs))
        guard row != current else { return }
        save(row, key: key)
        outbox.append(OutboxEntry(entitlement: row.entitlement, active: row.active, eventId: eventId, transferredFrom: from, transferredTo: to))
    }

    private mutating func save(_ row: EntitlementRow, key: EntitlementKey) {
        entitlements[key] = row
        if let index = savedAt[key] {
            saved[index] = row
        } else {
            savedAt[key] = saved.count
            saved.append(row)
        }
    }
}
