import Events
import Store

/// A batch's fresh changes applied in order in memory, against the purchases loaded (and locked) for
/// them: what each change writes and which entitlements it refreshes, exactly as applying the changes
/// one per transaction would. A later change of a purchase sees the earlier one's result.
struct BatchPlan {
    /// One change that passed: the purchases it wrote and the entitlements to refresh after it.
    struct Step {
        var eventId: String
        var writes: [Purchase]
        /// Sorted, the order the refreshes run in.
        var touched: [EntitlementKey]
        /// The users a purchase moved between, when this change moved one.
        var transfer: (from: String, to: String)? = nil
        /// The event, when its applied events are recorded (`AppliedEventRecorder`).
        var event: NormalizedEvent? = nil
    }

    private(set) var outcomes: [ApplyOutcome] = []
    private(set) var steps: [Step] = []
    /// Every purchase written, in its final state, in the order first written.
    private(set) var written: [Purchase] = []
    /// Every entitlement some change refreshes, sorted.
    let touched: [EntitlementKey]

    /// The purchases the fresh changes name: their own and the ones they supersede.
    static func keys(_ changes: [PurchaseChange], fresh: [Bool]) -> [PurchaseKey] {
        var seen: Set<PurchaseKey> = [], keys: [PurchaseKey] = []
        for (change, isFresh) in zip(changes, fresh) where isFresh {
            for key in [change.key, replacedKey(change)].compactMap({ $0 }) where seen.insert(key).inserted { keys.append(key) }
        }
        return keys
    }

    private static func replacedKey(_ change: PurchaseChange) -> PurchaseKey? {
        // Same source, app and environment: a purchase replaces one of its own environment only.
        guard let subject = change.supersedes, subject != change.key.subject else { return nil }
        return PurchaseKey(source: change.key.source, app: change.key.app, environment: change.key.environment, subject: subject)
    }

    /// `proceeding`: the fresh changes that go ahead (none a step held back, none that names no purchase
    /// to change); a fresh one that does not is processed, `unchanged`.
    init(_ changes: [PurchaseChange], fresh: [Bool], proceeding: [Bool], stored: [PurchaseKey: Purchase]) {
        var purchases = stored
        var writtenAt: [PurchaseKey: Int] = [:]
        var allTouched: Set<EntitlementKey> = []
        for (index, change) in changes.enumerated() {
            guard fresh[index] else {
                outcomes.append(.duplicate)
                continue
            }
            guard proceeding[index] else {
                outcomes.append(.unchanged)
                continue
            }
            let current = purchases[change.key]
            let replaced = Self.replacedKey(change).flatMap { purchases[$0] }
            guard var next = change.update(current) else {
                outcomes.append(.unchanged)
                continue
            }
            next.key = change.key
            if next.user == nil { next.user = current?.user ?? replaced?.user }

            var touched: Set<EntitlementKey> = []
            if let current { touched.formUnion(EntitlementKey.of(current)) }
            touched.formUnion(EntitlementKey.of(next))
            var writes: [Purchase] = []
            if next != current { writes.append(next) }
            if var old = replaced, old.state != .superseded {
                touched.formUnion(EntitlementKey.of(old))
                old.state = .superseded
                old.supersededBy = change.key.subject
                writes.append(old)
            }
            for purchase in writes {
                purchases[purchase.key] = purchase
                if let index = writtenAt[purchase.key] {
                    written[index] = purchase
                } else {
                    writtenAt[purchase.key] = written.count
                    written.append(purchase)
                }
            }
            allTouched.formUnion(touched)
            var transfer: (from: String, to: String)?
            if let from = current?.user, let to = next.user, !from.isExactly(to) { transfer = (from, to) }
            steps.append(Step(eventId: change.eventId, writes: writes, touched: touched.sorted(), transfer: transfer, event: change.event))
            outcomes.append(next == current ? .unchanged : .applied)
        }
        self.touched = allTouched.sorted()
    }
}
