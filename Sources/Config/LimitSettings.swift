import Events

/// Backpressure: how many webhook requests are handled at once, and how fast each sender may send.
public struct LimitSettings: Sendable {
    /// A sustained rate with a burst allowance (a token bucket).
    public struct Rate: Sendable, Equatable {
        public var perSecond: Double
        public var burst: Int
        public init(perSecond: Double, burst: Int) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    /// Webhook requests being handled at once, all senders together; beyond it 503 `overloaded`.
    public var maxInFlight = 1_024
    /// Webhook requests being handled at once for one sender, so one sender cannot take every slot.
    public var maxInFlightPerSource = 512
    /// Open connections; past it new ones wait in the listen backlog (each holds up to `http.maxHeaderBytes` of head).
    public var maxConnections = 4_096
    /// Per sender; a sender without an entry is not rate limited.
    public var rates: [SourceName: Rate] = [:]
    public init() {}
}
