/// One timed run against the gateway, as written to the results.
struct PhaseResult: Codable {
    var mode: String
    var connections: Int
    /// Open loop: the fixed rate requests were sent at.
    var offeredPerSec: Double?
    var requests: Int
    var errors: Int
    var statuses: [String: Int]
    var firstError: String?
    var seconds: Double
    var requestsPerSec: Double
    var p50Ms: Double
    var p90Ms: Double
    var p99Ms: Double
    var p999Ms: Double
    var maxMs: Double
    var gatewayCpuSeconds: Double
    /// Gateway CPU seconds per 1000 answered requests.
    var gatewayCpuSecondsPerThousand: Double
    /// The gateway's CPU time over the wall time: 1.0 is its core saturated.
    var gatewayCpuUtilization: Double
    /// The gateway's core, busy with other processes, over the wall time (builds on a shared machine).
    var gatewayCoreForeignBusy: Double?
    /// CPU time the hypervisor stole from the gateway's core, over the wall time.
    var gatewayCoreSteal: Double?
    /// The load generator's own driving thread: CPU over wall time, and per request.
    var clientCpuUtilization: Double
    var clientCpuUsPerRequest: Double
    /// The client's core (shared with the broker), busy over the wall time.
    var clientCoreBusy: Double?
    /// The gateway's peak resident memory during the phase (VmHWM after a reset, or sampled).
    var gatewayPeakRssMib: Double
    var maxBacklog: Int?
    /// Closed loop: the pre-generated deliveries ran out before the time did.
    var exhausted: Bool?
}

/// Takes the gateway's and the machine's readings around one run.
struct PhaseMeter {
    let probe: ProcessProbe
    let gatewayCPU: Int
    let clientCPU: Int

    func measure(mode: String, connections: Int, offered: Double?, resetPeak: Bool,
                 _ body: (_ sample: () -> Void) throws -> RunOutcome) throws -> PhaseResult {
        let peakReset = resetPeak && probe.resetPeak()
        let cpuBefore = probe.cpuSeconds()
        let coresBefore = CoreUsage.read()
        var sampledPeak = probe.memory()?.rss ?? 0
        let outcome = try body {
            if let memory = probe.memory() { sampledPeak = max(sampledPeak, memory.rss) }
        }
        let coresAfter = CoreUsage.read()
        let cpu = max(0, (probe.cpuSeconds() ?? 0) - (cpuBefore ?? 0))
        let memory = probe.memory()
        // VmHWM is exact when it could be reset for this phase; otherwise the 200 ms samples.
        let peak = peakReset ? max(memory?.peak ?? 0, sampledPeak) : max(sampledPeak, memory?.rss ?? 0)
        let latencies = Latencies(outcome.latencies)
        let wall = max(outcome.seconds, 1e-9)
        let gatewayCore = coresAfter.since(coresBefore, core: gatewayCPU)
        let clientCore = coresAfter.since(coresBefore, core: clientCPU)
        let answered = max(outcome.answered, 1)
        return PhaseResult(
            mode: mode, connections: connections, offeredPerSec: offered.map(rounded1), requests: outcome.answered,
            errors: outcome.errors, statuses: Dictionary(uniqueKeysWithValues: outcome.statuses.map { (String($0.key), $0.value) }),
            firstError: outcome.firstError, seconds: rounded3(outcome.seconds), requestsPerSec: rounded1(outcome.perSecond),
            p50Ms: rounded3(latencies.milliseconds(0.5)), p90Ms: rounded3(latencies.milliseconds(0.9)),
            p99Ms: rounded3(latencies.milliseconds(0.99)), p999Ms: rounded3(latencies.milliseconds(0.999)),
            maxMs: rounded3(latencies.maxMilliseconds),
            gatewayCpuSeconds: rounded3(cpu), gatewayCpuSecondsPerThousand: rounded3(cpu * 1000 / Double(answered)),
            gatewayCpuUtilization: rounded3(cpu / wall),
            gatewayCoreForeignBusy: gatewayCore.map { rounded3(max(0, $0.busy - cpu) / wall) },
            gatewayCoreSteal: gatewayCore.map { rounded3($0.steal / wall) },
            clientCpuUtilization: rounded3(Double(outcome.clientCPU) / 1e9 / wall),
            clientCpuUsPerRequest: rounded3(Double(outcome.clientCPU) / 1e3 / Double(answered)),
            clientCoreBusy: clientCore.map { rounded3($0.busy / wall) },
            gatewayPeakRssMib: rounded1(Double(peak) / 1024),
            maxBacklog: mode == "open" ? outcome.maxBacklog : nil,
            exhausted: mode == "open" ? nil : outcome.exhausted)
    }
}

func rounded1(_ value: Double) -> Double { (value * 10).rounded() / 10 }
func rounded3(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
