/// What one timed run saw, before it is turned into figures.
struct RunOutcome {
    /// Answers received, whatever their status.
    var answered = 0
    /// Non-2xx answers, connections lost mid-request and requests never answered.
    var errors = 0
    var statuses: [Int: Int] = [:]
    var firstError: String?
    /// Latency of each answer, nanoseconds (from the send, or from the scheduled send in the open loop).
    var latencies: [UInt64] = []
    var start: UInt64 = 0
    var end: UInt64 = 0
    /// The driver thread's CPU time during the run.
    var clientCPU: UInt64 = 0
    /// Open loop: most requests due but waiting for a free connection at once.
    var maxBacklog = 0
    /// Closed loop: the run ended because the pre-generated deliveries ran out, before its time.
    var exhausted = false

    var seconds: Double { Double(end - start) / 1e9 }
    var perSecond: Double { seconds > 0 ? Double(answered) / seconds : 0 }

    mutating func record(_ error: String) {
        errors += 1
        if firstError == nil { firstError = error }
    }
}
