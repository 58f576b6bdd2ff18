import Foundation
import Verifiers

/// The results as a table on standard output, with the issue's targets beside the figures.
enum ResultsTable {
    static let order = SenderCatalog.standard.names.map(\.rawValue)
    /// Ratio to the raw verify rate each sender should reach.
    static let ratioTargets = [AppleSender.name.rawValue: 0.50, GoogleSender.name.rawValue: 0.20]
    /// The gateway's share of its core in the closed loop: below it, something waits that should not.
    static let closedLoopCPUTarget = 0.95
    /// p99 over p50 in the 16-connection closed loop.
    static let fewTailTarget = 3.0
    static let p99AtHalfLoadTargetMs = 10.0
    static let peakRssTargetMib = 150.0

    static func print(_ results: BenchResults) {
        let machine = results.machine
        Swift.print("")
        Swift.print("Gateway under load: \(machine.cpuModel), \(machine.cores) cores, kernel \(machine.kernel), load average at start \(machine.loadAverageAtStart)")
        Swift.print("commit \(results.commit ?? "?")\(results.dirty == true ? " (uncommitted changes)" : ""), \(results.date)")
        Swift.print("gateway on cpu \(results.method.gatewayCpu); broker and load generator on cpu \(results.method.clientCpu); raw verify on cpu \(results.rawVerify.cpu): ES256 \(Int(results.rawVerify.es256PerSecond))/s, RS256 \(Int(results.rawVerify.rs256PerSecond))/s")
        let healthz = results.client.healthz
        Swift.print("client: GET /healthz \(Int(healthz.requestsPerSec)) req/s at \(healthz.clientCpuUsPerRequest) us client CPU each: ceiling \(Int(results.client.clientCeilingPerSec)) req/s on one core")
        Swift.print("")
        let header = ["source", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "p99 @half", "CPU s/1000", "RSS MiB", "checks", "raw/s", "ratio", "gw CPU", "foreign", "p99/p50 @16", "errors"]
        let widths = [11, 9, 8, 8, 9, 10, 11, 8, 9, 8, 14, 8, 8, 17, 6]
        Swift.print(row(header, widths))
        for name in order {
            guard let source = results.sources[name] else { continue }
            let checks = source.algorithm.map { "\(source.checksPerRequest)x\($0)" } ?? "-"
            let ratio = source.ratioToRawVerify.map { value in
                String(format: "%.2f", value) + (ratioTargets[name].map { value >= $0 ? " ok" : String(format: " <%.2f", $0) } ?? "")
            } ?? "-"
            let p99Half = String(format: "%.2f", source.p99MsAtHalfLoad) + (source.p99MsAtHalfLoad < p99AtHalfLoadTargetMs ? "" : " !")
            let rss = String(format: "%.1f", source.peakRssMib) + (source.peakRssMib < peakRssTargetMib ? "" : " !")
            Swift.print(row([
                name, String(Int(source.requestsPerSec)), String(format: "%.2f", source.p50Ms), String(format: "%.2f", source.p99Ms),
                String(format: "%.2f", source.p999Ms), p99Half, String(format: "%.3f", source.cpuSecondsPerThousand), rss, checks,
                source.rawVerifyPerSec.map { String(Int($0)) } ?? "-", ratio,
                String(format: "%.2f", source.closedLoop.gatewayCpuUtilization)
                    + (source.closedLoop.gatewayCpuUtilization >= closedLoopCPUTarget ? "" : " !"),
                source.closedLoop.gatewayCoreForeignBusy.map { String(format: "%.2f", $0) } ?? "-",
                source.closedLoopFew.map { few in
                    String(format: "%.1f/%.1f=%.1f", few.p99Ms, few.p50Ms, source.p99OverP50Few ?? 0)
                        + ((source.p99OverP50Few ?? .infinity) <= fewTailTarget ? "" : " !")
                } ?? "-",
                String(source.errors),
            ], widths))
        }
        Swift.print("")
        Swift.print("targets: ratio >= 0.50 (apple, ES256) and >= 0.20 (google, RS256); p99 < 10 ms at half load; peak RSS < 150 MiB; gw CPU >= 0.95; p99 <= 3x p50 with 16 connections (! = missed)")
        Swift.print("gw CPU: the gateway's CPU over wall time in the closed loop (1.00 = its core saturated); foreign: its core busy with other processes")
        if results.valid {
            Swift.print("valid: every answer was 2xx")
        } else {
            Swift.print("INVALID:")
            for problem in results.problems { Swift.print("  " + problem) }
        }
    }

    private static func row(_ cells: [String], _ widths: [Int]) -> String {
        zip(cells, widths).map { cell, width in cell.count >= width ? cell + " " : cell + String(repeating: " ", count: width - cell.count) }
            .joined()
    }
}
