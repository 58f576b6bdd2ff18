import Entitlements
import Events

/// Looks up the state a sender's API reports for an event's purchase (Google's RTDN events carry none).
protocol PurchaseEnricher: Sendable {
    /// The purchase's state now, or nil when this event needs no lookup. Throws a failure that says
    /// whether a retry may pass; a failed lookup is never taken as a revocation.
    func snapshot(for event: NormalizedEvent) async throws(WorkerFailure) -> PurchaseSnapshot?
}
