import Foundation
import Verifiers

/// `tollgate-load run`: against a gateway started with `prepare`'s configuration, measures the raw
/// verify rates on the gateway's core, the client's ceiling on `/healthz`, then for each sender a
/// warm-up, the closed-loop maximum and an open-loop run at half of it, and writes the results.
struct BenchRun {
    struct Options {
        var directory = ""
        var port: UInt16 = 0
        var gatewayPid: Int32 = 0
        var gatewayCPU = 1
        var clientCPU = 0
        var brokerCPU = 0
        var connections = 64
        var openConnections = 128
        var warmupSeconds = 2.0
        var closedSeconds = 8.0
        var openSeconds = 8.0
        var sources = SenderCatalog.standard.names.map(\.rawValue)
        var output = "bench/results/latest.json"
        var commit: String?
        var dirty: Bool?
        /// When set, each sender's closed loop is also recorded with `perf` into `<dir>/<sender>.data`.
        var perfDirectory: String?
    }

    let options: Options

    func run() throws -> BenchResults {
        let probe = ProcessProbe(pid: options.gatewayPid)
        guard probe.alive else { throw LoadGenError("no process \(options.gatewayPid) (the gateway)") }
        let meter = PhaseMeter(probe: probe, gatewayCPU: options.gatewayCPU, clientCPU: options.clientCPU)
        let host = "127.0.0.1:\(options.port)"
        let runTag = randomHex(4)
        let machine = Machine.current()
        var problems: [String] = []

        try GatewayEndpoints.waitUntilReady(port: options.port, seconds: 30)
        log("raw verify rates on cpu \(options.gatewayCPU) (gateway idle)")
        let raw = try RawVerifyRate.measure(onCPU: options.gatewayCPU)
        log("  ES256 \(Int(raw.es256PerSecond))/s, RS256 \(Int(raw.rs256PerSecond))/s")

        log("client ceiling: closed loop on GET /healthz, \(options.connections) connections, 3 s")
        let healthz = try pinned {
            try meter.measure(mode: "closed", connections: options.connections, offered: nil, resetPeak: false) { sample in
                try LoadDriver(port: options.port, connections: options.connections)
                    .run(RequestArena.repeated(get: "/healthz", host: host, count: 400_000), mode: .closed(seconds: 3), sample: sample)
            }
        }
        if healthz.errors > 0 { problems.append("healthz: \(healthz.errors) errors: \(healthz.firstError ?? "")") }
        let ceiling = healthz.clientCpuUsPerRequest > 0 ? 1e6 / healthz.clientCpuUsPerRequest : 0
        log("  \(Int(healthz.requestsPerSec)) req/s; client \(healthz.clientCpuUsPerRequest) us CPU per request: ceiling \(Int(ceiling)) req/s on one core")

        var sources: [String: SourceSummary] = [:]
        for name in options.sources {
            let traffic = try SenderTraffic.load(name, directory: options.directory)
            let summary = try measure(traffic, raw: raw, meter: meter, host: host, runTag: runTag, problems: &problems)
            sources[name] = summary
        }
        return BenchResults(
            date: ISO8601DateFormatter().string(from: Date()), commit: options.commit, dirty: options.dirty, machine: machine,
            method: .init(gatewayCpu: options.gatewayCPU, clientCpu: options.clientCPU, brokerCpu: options.brokerCPU,
                          closedLoopConnections: options.connections, openLoopConnections: options.openConnections,
                          warmupSeconds: options.warmupSeconds, closedLoopSeconds: options.closedSeconds,
                          openLoopSeconds: options.openSeconds,
                          description: "tollgate serve pinned to one core (taskset), the embedded broker (tollgate broker, acks=all) and this load generator on the other; unique pre-signed deliveries per sender over HTTP/1.1 keep-alive; closed loop for the maximum, then open loop at half of it with latency from each request's scheduled time"),
            rawVerify: raw, client: .init(healthz: healthz, clientCeilingPerSec: ceiling.rounded()),
            sources: sources, valid: problems.isEmpty, problems: problems)
    }

    /// `written`: where the server says the requests went, by outcome, given how many were sent; nil
    /// means every delivery must show as published to Kafka on the gateway's `/metrics`.
    func measure(_ traffic: SenderTraffic, raw: RawVerifyRate.Rates, meter: PhaseMeter, host: String, runTag: String,
                 problems: inout [String], written check: ((Int) throws -> (counts: [String: Int], problem: String?))? = nil) throws -> SourceSummary {
        let name = traffic.source
        var nextIndex = 0
        func generate(_ count: Int) -> RequestArena {
            let started = Clock.now()
            let arena = RequestArena.generate(traffic, first: nextIndex, count: count, run: runTag, host: host)
            nextIndex += count
            log("  signed \(count) deliveries (\(arena.bytes.count / max(count, 1)) bytes each) in \(String(format: "%.1f", Double(Clock.now() - started) / 1e9)) s")
            return arena
        }
        log("\(name): warm-up")
        let warmupTraffic = generate(4_000)
        let warmup = try pinned {
            try meter.measure(mode: "closed", connections: options.connections, offered: nil, resetPeak: false) { sample in
                try LoadDriver(port: options.port, connections: options.connections)
                    .run(warmupTraffic, mode: .closed(seconds: options.warmupSeconds), sample: sample)
            }
        }
        // Enough deliveries for the closed loop at 1.6 times the warm-up's rate; should the gateway
        // be faster still, the run ends early and says so.
        let closedCount = min(1_000_000, max(2_000, Int(warmup.requestsPerSec * 1.6 * options.closedSeconds)))
        log("\(name): closed loop, \(options.connections) connections, \(options.closedSeconds) s (warm-up ran at \(Int(warmup.requestsPerSec)) req/s)")
        let closedTraffic = generate(closedCount)
        // Recorded from the loop's start until a second before its end, while every connection is busy.
        let recorder = try options.perfDirectory.map {
            try PerfRecorder.start(pid: options.gatewayPid, output: "\($0)/\(name).data",
                                   seconds: max(1, options.closedSeconds - 1), onCPU: options.clientCPU)
        }
        func closedLoop(_ traffic: RequestArena) throws -> PhaseResult {
            try pinned {
                try meter.measure(mode: "closed", connections: options.connections, offered: nil, resetPeak: true) { sample in
                    try LoadDriver(port: options.port, connections: options.connections)
                        .run(traffic, mode: .closed(seconds: options.closedSeconds), sample: sample)
                }
            }
        }
        var closed = try closedLoop(closedTraffic)
        try recorder?.finish()
        // A warm-up slowed by something passing (consumers joining their group, another process) signs too
        // few: the loop runs again, signed for the rate it reached, and the short run is only counted as sent.
        var discarded = 0
        if closed.exhausted == true, closed.seconds < options.closedSeconds / 2 {
            discarded = closed.requests
            log("  ran out of deliveries after \(closed.seconds) s at \(Int(closed.requestsPerSec)) req/s: again, signed for that rate")
            closed = try closedLoop(generate(min(1_000_000, max(2_000, Int(closed.requestsPerSec * 1.6 * options.closedSeconds)))))
        }
        log("  \(Int(closed.requestsPerSec)) req/s, p50 \(closed.p50Ms) ms, p99 \(closed.p99Ms) ms, gateway CPU \(closed.gatewayCpuUtilization), errors \(closed.errors)")

        let half = closed.requestsPerSec / 2
        log("\(name): open loop at \(Int(half)) req/s, \(options.openSeconds) s")
        let openTraffic = generate(max(1, Int(half * options.openSeconds)))
        let open = try pinned {
            try meter.measure(mode: "open", connections: options.openConnections, offered: half, resetPeak: false) { sample in
                try LoadDriver(port: options.port, connections: options.openConnections)
                    .run(openTraffic, mode: .open(perSecond: half), sample: sample)
            }
        }
        log("  \(Int(open.requestsPerSec)) req/s, p50 \(open.p50Ms) ms, p99 \(open.p99Ms) ms, errors \(open.errors)")

        // Saturation with few connections, as a sender's pool drives it: a tail here is requests held back
        // by something (a periodic task, a lock, a flush), not queued behind 63 others.
        let fewSeconds = max(2, options.closedSeconds / 2)
        log("\(name): closed loop, \(Self.fewConnections) connections, \(fewSeconds) s")
        let fewTraffic = generate(min(1_000_000, max(2_000, Int(closed.requestsPerSec * 1.6 * fewSeconds))))
        let few = try pinned {
            try meter.measure(mode: "closed", connections: Self.fewConnections, offered: nil, resetPeak: false) { sample in
                try LoadDriver(port: options.port, connections: Self.fewConnections).run(fewTraffic, mode: .closed(seconds: fewSeconds), sample: sample)
            }
        }
        log("  \(Int(few.requestsPerSec)) req/s, p50 \(few.p50Ms) ms, p99 \(few.p99Ms) ms, gateway CPU \(few.gatewayCpuUtilization), errors \(few.errors)")

        for (phase, result) in [("warm-up", warmup), ("closed loop", closed), ("open loop", open), ("16-connection closed loop", few)] where result.errors > 0 {
            problems.append("\(name) \(phase): \(result.errors) errors, first: \(result.firstError ?? "?")")
        }
        // Every delivery sent was answered 2xx (else the errors above): each must have been published.
        let sent = warmup.requests + discarded + closed.requests + open.requests + few.requests
        let written: [String: Int]
        if let check {
            let (counts, problem) = try check(sent)
            written = counts
            if let problem { problems.append("\(name): \(problem)") }
        } else {
            written = try GatewayEndpoints.deliveriesWritten(port: options.port, source: name)
            let published = written["published", default: 0]
            if published != sent || written["spooled", default: 0] > 0 || written["duplicate", default: 0] > 0 {
                problems.append("\(name): of \(sent) deliveries sent the gateway published \(published) to Kafka, spooled \(written["spooled", default: 0]) and took \(written["duplicate", default: 0]) for duplicates")
            }
        }
        if closed.exhausted == true, closed.seconds < options.closedSeconds / 2 {
            problems.append("\(name): the closed loop ran out of deliveries after \(closed.seconds) s")
        }
        let rawRate: Double? = switch traffic.algorithm {
        case "ES256": raw.es256PerSecond
        case "RS256": raw.rs256PerSecond
        default: nil
        }
        return SourceSummary(
            requestsPerSec: closed.requestsPerSec, p50Ms: closed.p50Ms, p99Ms: closed.p99Ms, p999Ms: closed.p999Ms,
            p99MsAtHalfLoad: open.p99Ms, cpuSecondsPerThousand: closed.gatewayCpuSecondsPerThousand,
            peakRssMib: max(closed.gatewayPeakRssMib, open.gatewayPeakRssMib),
            checksPerRequest: traffic.checksPerRequest, algorithm: traffic.algorithm, rawVerifyPerSec: rawRate,
            ratioToRawVerify: rawRate.map { rounded3(closed.requestsPerSec * Double(traffic.checksPerRequest) / $0) },
            errors: warmup.errors + closed.errors + open.errors + few.errors, generated: nextIndex, deliveriesWritten: written,
            warmup: warmup, closedLoop: closed, openLoop: open, closedLoopFew: few,
            p99OverP50Few: few.p50Ms > 0 ? rounded3(few.p99Ms / few.p50Ms) : nil)
    }

    /// The connections of the second closed loop, where each sender's p99 should stay within 3x its p50.
    static let fewConnections = 16

    /// Timed runs drive from the client's core; signing happens on every core in between.
    private func pinned<T>(_ body: () throws -> T) throws -> T {
        guard ThreadAffinity.pin(to: options.clientCPU) else { throw LoadGenError("cannot pin to cpu \(options.clientCPU)") }
        defer { ThreadAffinity.restore() }
        return try body()
    }
}

func log(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
