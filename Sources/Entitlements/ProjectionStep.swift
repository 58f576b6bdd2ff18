import Store

/// A merchant feature's write that belongs to an event's projection (a checkout's new state, a store
/// call queued for a job to make): it runs in the batch's transaction, for an event applied for the
/// first time, before the event's purchase change, and says whether that change goes ahead. So what an
/// event does is all committed with it or not at all, and `prepare` only reads.
public protocol ProjectionStep: Sendable {
    func apply(eventId: String, nowMs: Int64, on connection: any SQLConnection) throws(StoreError) -> ProjectionStepResult
}

/// What a step decided.
public struct ProjectionStepResult: Sendable {
    /// Whether the event's purchase change is applied; when not, the event is recorded as processed,
    /// its outcome `unchanged`.
    public var proceeds: Bool
    /// Runs once the transaction committed (metrics and logs of what the step did), never for a
    /// transaction that rolled back.
    public var afterCommit: (@Sendable () -> Void)?

    public init(proceeds: Bool, afterCommit: (@Sendable () -> Void)? = nil) {
        self.proceeds = proceeds
        self.afterCommit = afterCommit
    }
}
