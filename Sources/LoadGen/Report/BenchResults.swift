import Foundation

/// `bench/results/latest.json`: the machine, the commit, the raw verify rates, the client's own
/// ceiling and one summary per sender (with its phases), plus the micro-benchmarks `report` adds.
struct BenchResults: Codable {
    var benchmark = "gateway-load"
    var date: String
    var commit: String?
    var dirty: Bool?
    var machine: Machine
    var method: Method
    var rawVerify: RawVerifyRate.Rates
    var client: ClientCeiling
    var sources: [String: SourceSummary]
    var valid: Bool
    var problems: [String]

    struct Method: Codable {
        var gatewayCpu: Int
        var clientCpu: Int
        var brokerCpu: Int
        var closedLoopConnections: Int
        var openLoopConnections: Int
        var warmupSeconds: Double
        var closedLoopSeconds: Double
        var openLoopSeconds: Double
        var description: String
    }

    /// The load generator against `/healthz`: what the client can drive at all, and what it costs it.
    struct ClientCeiling: Codable {
        var healthz: PhaseResult
        /// One client core's requests per second at the measured client CPU per request.
        var clientCeilingPerSec: Double
    }
}

/// One sender: the figures the issue asks for, then the phases they come from.
struct SourceSummary: Codable {
    var requestsPerSec: Double
    var p50Ms: Double
    var p99Ms: Double
    var p999Ms: Double
    var p99MsAtHalfLoad: Double
    var cpuSecondsPerThousand: Double
    var peakRssMib: Double
    var checksPerRequest: Int
    var algorithm: String?
    var rawVerifyPerSec: Double?
    var ratioToRawVerify: Double?
    var errors: Int
    var generated: Int
    /// The gateway's `tollgate_deliveries_written_total` for the sender after its runs, by outcome.
    var deliveriesWritten: [String: Int]
    var warmup: PhaseResult
    var closedLoop: PhaseResult
    var openLoop: PhaseResult
    /// The closed loop again with 16 connections (`BenchRun.fewConnections`), and its p99 over its p50.
    var closedLoopFew: PhaseResult?
    var p99OverP50Few: Double?

    enum CodingKeys: String, CodingKey {
        case requestsPerSec = "requests_per_sec", p50Ms = "p50_ms", p99Ms = "p99_ms", p999Ms = "p999_ms"
        case p99MsAtHalfLoad = "p99_ms_at_half_load", cpuSecondsPerThousand = "cpu_s_per_1000", peakRssMib = "peak_rss_mib"
        case checksPerRequest = "checks_per_request", algorithm, rawVerifyPerSec = "raw_verify_per_sec"
        case ratioToRawVerify = "ratio_to_raw_verify", errors, generated = "deliveries_generated"
        case deliveriesWritten = "deliveries_written"
        case warmup, closedLoop = "closed_loop", openLoop = "open_loop", closedLoopFew = "closed_loop_16"
        case p99OverP50Few = "p99_over_p50_16"
    }
}

/// Adds `value` (snake_case keys) to the load run's results file under `key`, keeping the rest:
/// what `cold-start` and `purchases` measure after `run` wrote the file.
func mergeResults(_ value: some Encodable, as key: String, into path: String) throws {
    let url = URL(fileURLWithPath: path)
    guard var document = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] else {
        throw LoadGenError("\(path) is not a JSON object")
    }
    let encoder = JSONEncoder()
    encoder.keyEncodingStrategy = .convertToSnakeCase
    document[key] = try JSONSerialization.jsonObject(with: encoder.encode(value))
    let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    try (data + Data("\n".utf8)).write(to: url)
}
