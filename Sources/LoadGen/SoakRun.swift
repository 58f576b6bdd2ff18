import Foundation
import Verifiers

/// `tollgate-load soak`: every sender's deliveries interleaved, open loop at one fixed rate for
/// minutes, sampling the gateway's resident memory, to see whether it stays flat (caches, the
/// deduplication window and librdkafka's buffers must all be bounded).
struct SoakRun {
    struct Options {
        var directory = ""
        var port: UInt16 = 0
        var gatewayPid: Int32 = 0
        var gatewayCPU = 1
        var clientCPU = 0
        var connections = 128
        var perSecond = 500.0
        var seconds = 300.0
        var sources = SenderCatalog.standard.names.map(\.rawValue)
        var output = "bench/results/soak.json"
        var commit: String?
    }

    struct Results: Codable {
        var benchmark = "gateway-soak"
        var date: String
        var commit: String?
        var machine: Machine
        var sources: [String]
        var offeredPerSec: Double
        var run: PhaseResult
        /// Seconds since the start and the gateway's resident memory (MiB), every 5 s.
        var rssSeries: [[Double]]
        /// Slope of the resident memory over the last minute, MiB per minute. The deduplication
        /// window grows until it holds `dedup.maxEntries` ids (200 s at 500 requests/s with the
        /// default 100,000), so the earlier minutes grow by design.
        var rssGrowthMibPerMinuteLastMinute: Double
        var flat: Bool
        var valid: Bool
        var problems: [String]
    }

    let options: Options

    func run() throws -> Results {
        let probe = ProcessProbe(pid: options.gatewayPid)
        guard probe.alive else { throw LoadGenError("no process \(options.gatewayPid) (the gateway)") }
        try GatewayEndpoints.waitUntilReady(port: options.port, seconds: 30)
        let host = "127.0.0.1:\(options.port)"
        let runTag = randomHex(4)
        let total = Int(options.perSecond * options.seconds)
        let perSource = (total + options.sources.count - 1) / options.sources.count
        log("soak: signing \(perSource) deliveries for each of \(options.sources.joined(separator: ", "))")
        let arenas = try options.sources.map { name in
            RequestArena.generate(try SenderTraffic.load(name, directory: options.directory),
                                  first: 0, count: perSource, run: runTag, host: host)
        }
        // Round robin over the senders, so each minute carries the same mix.
        var mixed = RequestArena()
        for index in 0..<perSource { for arena in arenas { mixed.append(arena, index) } }

        log("soak: open loop at \(Int(options.perSecond)) req/s for \(Int(options.seconds)) s over \(options.connections) connections")
        let meter = PhaseMeter(probe: probe, gatewayCPU: options.gatewayCPU, clientCPU: options.clientCPU)
        let start = Clock.now()
        var series: [[Double]] = []
        var nextSample = start
        guard ThreadAffinity.pin(to: options.clientCPU) else { throw LoadGenError("cannot pin to cpu \(options.clientCPU)") }
        let result = try meter.measure(mode: "open", connections: options.connections, offered: options.perSecond, resetPeak: true) { sample in
            try LoadDriver(port: options.port, connections: options.connections).run(mixed, mode: .open(perSecond: options.perSecond)) {
                sample()
                let now = Clock.now()
                guard now >= nextSample, let memory = probe.memory() else { return }
                series.append([rounded1(Double(now - start) / 1e9), rounded1(Double(memory.rss) / 1024)])
                nextSample = now + 5_000_000_000
            }
        }
        ThreadAffinity.restore()

        var problems: [String] = []
        if result.errors > 0 { problems.append("\(result.errors) errors, first: \(result.firstError ?? "?")") }
        let sent = options.sources.reduce(0) { total, name in
            total + ((try? GatewayEndpoints.deliveriesWritten(port: options.port, source: name)) ?? [:])["published", default: 0]
        }
        if sent != result.requests { problems.append("the gateway published \(sent) of \(result.requests) deliveries to Kafka") }
        let slope = Self.slope(series.filter { $0[0] >= options.seconds - 60 })
        return Results(date: ISO8601DateFormatter().string(from: Date()), commit: options.commit, machine: Machine.current(),
                       sources: options.sources, offeredPerSec: options.perSecond, run: result, rssSeries: series,
                       rssGrowthMibPerMinuteLastMinute: rounded3(slope), flat: slope < 0.5,
                       valid: problems.isEmpty, problems: problems)
    }

    /// Least-squares slope of MiB over time, per minute.
    static func slope(_ points: [[Double]]) -> Double {
        guard points.count >= 2 else { return 0 }
        let n = Double(points.count)
        let meanT = points.reduce(0) { $0 + $1[0] } / n, meanY = points.reduce(0) { $0 + $1[1] } / n
        let numerator = points.reduce(0) { $0 + ($1[0] - meanT) * ($1[1] - meanY) }
        let denominator = points.reduce(0) { $0 + ($1[0] - meanT) * ($1[0] - meanT) }
        return denominator > 0 ? numerator / denominator * 60 : 0
    }

    static func print(_ results: Results) {
        let run = results.run
        Swift.print("")
        Swift.print("Soak: \(results.sources.joined(separator: ", ")) interleaved, open loop at \(Int(results.offeredPerSec)) req/s for \(Int(run.seconds)) s, commit \(results.commit ?? "?")")
        Swift.print("answered \(run.requests), errors \(run.errors); p50 \(run.p50Ms) ms, p99 \(run.p99Ms) ms, p99.9 \(run.p999Ms) ms; gateway CPU \(run.gatewayCpuSecondsPerThousand) s per 1000")
        Swift.print("gateway RSS (MiB) every 5 s: " + results.rssSeries.map { String(format: "%.0f", $0[1]) }.joined(separator: " "))
        Swift.print("peak \(run.gatewayPeakRssMib) MiB; last minute \(results.rssGrowthMibPerMinuteLastMinute) MiB/min: \(results.flat ? "flat" : "GROWING")")
        if !results.valid { Swift.print("INVALID: " + results.problems.joined(separator: "; ")) }
    }
}
