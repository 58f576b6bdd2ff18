import Foundation
import Verifiers

/// `tollgate-load purchases`: `POST /v1/purchases` with Apple signed transactions against `tollgate work`
/// pinned to the gateway's core, measured as the webhooks are (warm-up, closed-loop maximum, open loop
/// at half of it; CPU per request of the workers process, beside the raw ES256 rate on that core). Each
/// request is a new purchase for a new user: it verifies, publishes and waits for the projection, so
/// the figures are the whole answer, not the verification alone.
enum PurchasesRun {
    struct Result: Encodable {
        var rawVerify: RawVerifyRate.Rates
        var apple: SourceSummary
        var valid: Bool
        var problems: [String]
    }

    static func run(options: BenchRun.Options) throws -> Result {
        let probe = ProcessProbe(pid: options.gatewayPid)
        guard probe.alive else { throw LoadGenError("no process \(options.gatewayPid) (the workers)") }
        try GatewayEndpoints.waitUntilReady(port: options.port, seconds: 30)
        log("purchases: raw verify rates on cpu \(options.gatewayCPU) (workers idle)")
        let raw = try RawVerifyRate.measure(onCPU: options.gatewayCPU)
        let traffic = SenderTraffic(source: "purchases-apple",
                                    traffic: try ApplePurchaseLoadTraffic(directory: LoadDirectory(path: options.directory, sender: AppleSender.name)))
        var problems: [String] = []
        try untilApplied(traffic, port: options.port, seconds: 30)
        // Counted from here: the purchases before it waited for the projection's first assignment.
        let before = try reported(port: options.port)
        let meter = PhaseMeter(probe: probe, gatewayCPU: options.gatewayCPU, clientCPU: options.clientCPU)
        let summary = try BenchRun(options: options).measure(
            traffic, raw: raw, meter: meter, host: "127.0.0.1:\(options.port)", runTag: randomHex(4), problems: &problems) { sent in
            var counts = try reported(port: options.port)
            for (outcome, count) in before { counts[outcome, default: 0] -= count }
            let applied = counts["applied", default: 0]
            return (counts, applied == sent ? nil : "of \(sent) purchases answered 2xx the workers applied \(applied) within purchases.waitMs (\(counts))")
        }
        return Result(rawVerify: raw, apple: summary, valid: problems.isEmpty, problems: problems)
    }

    /// One purchase at a time until one is answered 200 (applied): a process just started (`tollgate dev`)
    /// answers 202 until its projection has joined its group, which is not what the bench measures.
    static func untilApplied(_ traffic: SenderTraffic, port: UInt16, seconds: Double) throws {
        let deadline = Clock.now() + UInt64(seconds * 1e9)
        var index = 0
        while Clock.now() < deadline {
            let arena = RequestArena.generate(traffic, first: 1_000_000_000 + index, count: 1, run: randomHex(4), host: "127.0.0.1:\(port)")
            index += 1
            let outcome = try LoadDriver(port: port, connections: 1).run(arena, mode: .closed(seconds: 10), sample: {})
            if outcome.statuses[200, default: 0] == 1 { return }
        }
        throw LoadGenError("no purchase was applied within \(Int(seconds)) s of the workers' start")
    }

    /// `tollgate_purchases_total{store="apple"}` by outcome.
    static func reported(port: UInt16) throws -> [String: Int] {
        let answer = try GatewayEndpoints.get(port: port, path: "/metrics")
        guard answer.status == 200 else { throw LoadGenError("/metrics answered \(answer.status)") }
        var counts: [String: Int] = [:]
        for line in answer.body.split(separator: "\n") where line.hasPrefix("tollgate_purchases_total{") && line.contains("store=\"apple\"") {
            guard let start = line.range(of: "outcome=\"")?.upperBound, let end = line[start...].firstIndex(of: "\""),
                  let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            counts[String(line[start..<end])] = Int(value)
        }
        return counts
    }
}
