import Events
import Store

/// An event the projection applied, with one entitlement it touched as that entitlement stands right
/// after the event (whether or not the event changed it): what an outbound webhook tells.
public struct AppliedEvent: Sendable {
    public let event: NormalizedEvent
    public let entitlement: Entitlement
    public let active: Bool
    /// A purchase that moved between users: the other side of the move, as on `tollgate.entitlements`.
    public let transferredFrom: String?
    public let transferredTo: String?

    public init(event: NormalizedEvent, entitlement: Entitlement, active: Bool, transferredFrom: String? = nil, transferredTo: String? = nil) {
        self.event = event
        self.entitlement = entitlement
        self.active = active
        self.transferredFrom = transferredFrom
        self.transferredTo = transferredTo
    }
}

/// Writes what the applied events mean to another feature in the projection's transaction, after the
/// entitlements: so it is recorded exactly when, and in the order, the projection applied them.
public protocol AppliedEventRecorder: Sendable {
    /// In the order applied; returns what to run once the transaction committed (wake a sender).
    func record(_ applied: [AppliedEvent], nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> (@Sendable () -> Void)?
}
