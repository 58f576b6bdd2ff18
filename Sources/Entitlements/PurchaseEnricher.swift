import Events

/// What a sender's API says about an event's purchase (Google's RTDN events carry no state, and
/// whoever holds one valid push token can write any of them).
public enum Enrichment: Sendable, Equatable {
    /// No lookup for this event: it applies as sent.
    case asSent
    /// The purchase's state as the API reports it now, which the event's change takes.
    case state(PurchaseSnapshot)
    /// The API does not confirm what the event claims (a voided purchase Google does not list, an end
    /// of a purchase Google reports entitling): counted and logged, and the purchase takes only the
    /// state the API reports, if there is one; nil changes nothing.
    case unconfirmed(PurchaseSnapshot?)
}

/// Looks up the state a sender's API reports for an event's purchase.
public protocol PurchaseEnricher: Sendable {
    /// Throws a failure that says whether a retry may pass; a failed lookup is never taken as a revocation.
    func enrich(_ event: NormalizedEvent) async throws(WorkerFailure) -> Enrichment
}
