import Entitlements
import Events
@testable import Merchant

extension CheckoutMatcher {
    /// What the projection does with `event` (`EventProcessor`): matched to its checkout, its purchase
    /// change applied with the checkout's step in one transaction. The event as applied, or nil when the
    /// step held its change back (or it was applied before); an event that names no checkout comes back
    /// as it is, not applied.
    func project(_ event: NormalizedEvent, into store: EntitlementStore) async throws -> NormalizedEvent? {
        guard let matched = try await match(event) else { return event }
        var change = Projector.change(for: matched.event)
            ?? .stepsOnly(eventId: matched.event.id, key: Projector.purchaseKey(of: matched.event), steps: [])
        change.steps = matched.step.map { [$0] } ?? []
        return try await store.apply([change], nowMs: now()) == [.applied] ? matched.event : nil
    }
}
