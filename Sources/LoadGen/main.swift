import Foundation
import Glibc

// tollgate-load prepare --dir D
//     generates the senders' keys and secrets into D, with the gateway configuration D/tollgate.yaml
// tollgate-load run --dir D --port P --gateway-pid PID [--gateway-cpu 1] [--client-cpu 0]
//     [--connections 64] [--open-connections 128] [--warmup S] [--seconds S] [--open-seconds S]
//     [--sources apple,google,...] [--commit SHA] [--dirty] [--json FILE] [--perf-dir D]
//     drives the running gateway and writes the results (see docs/performance.md); with --perf-dir,
//     `perf record`s the gateway during each sender's closed loop into D/<sender>.data (make profile)
// tollgate-load soak --dir D --port P --gateway-pid PID [--rate 500] [--seconds 300] [--sources ...] [--json FILE]
//     every sender interleaved, open loop at one rate for minutes, the gateway's memory sampled
// tollgate-load cold-start --dir D --tollgate BIN --brokers B [--gateway-cpu 1] [--client-cpu 0] [--connections 16]
//     [--seconds 1.5] [--pid-file F] [--ignore-readiness] [--json FILE]
//     starts a fresh `BIN serve`, and from the moment /readyz answers 200 (or, --ignore-readiness, the port
//     is open) drives signed Apple deliveries;
//     adds `cold_start` to FILE (the results of `run`), or prints the figures alone without --json
// tollgate-load report --json FILE [--verifiers F] [--projection F] [--webhooks F]
//     adds tollgate-bench's micro-benchmarks to the results

// A write to a connection the gateway has closed must fail with EPIPE, not kill the client.
signal(SIGPIPE, SIG_IGN)

let usage = "usage: tollgate-load prepare --dir D | run|soak --dir D --port P --gateway-pid PID [options] | cold-start --dir D --tollgate BIN --brokers B [options] | purchases --dir D --port P --gateway-pid PID [--as purchases_dev] [--json F] | report --json F [--verifiers F] [--projection F] [--webhooks F]\n"
var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}
arguments.removeFirst()

/// The value after each `--name`, and the flags given alone.
func parse(_ arguments: [String], flags: Set<String>) -> [String: String] {
    var values: [String: String] = [:]
    var index = 0
    while index < arguments.count {
        let name = arguments[index]
        if flags.contains(name) {
            values[name] = "true"
            index += 1
        } else if index + 1 < arguments.count {
            values[name] = arguments[index + 1]
            index += 2
        } else {
            FileHandle.standardError.write(Data("tollgate-load: \(name) needs a value\n".utf8))
            exit(2)
        }
    }
    return values
}

func value<T>(_ values: [String: String], _ name: String, _ convert: (String) -> T?, default fallback: T) -> T {
    guard let text = values[name] else { return fallback }
    guard let converted = convert(text) else {
        FileHandle.standardError.write(Data("tollgate-load: \(name) \(text) is not valid\n".utf8))
        exit(2)
    }
    return converted
}

/// The gateway a run drives: `prepare`'s directory, its port and its process.
func gatewayTarget(_ values: [String: String], command: String) throws -> (String, UInt16, Int32) {
    guard let directory = values["--dir"] else { throw LoadGenError("\(command) needs --dir") }
    let port = value(values, "--port", { UInt16($0) }, default: 0)
    let pid = value(values, "--gateway-pid", { Int32($0) }, default: 0)
    guard port > 0, pid > 0 else { throw LoadGenError("\(command) needs --port and --gateway-pid") }
    return (directory, port, pid)
}

func writeResults(_ results: some Encodable, to path: String) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.keyEncodingStrategy = .convertToSnakeCase
    try (encoder.encode(results) + Data("\n".utf8)).write(to: URL(fileURLWithPath: path))
}

do {
    switch command {
    case "prepare":
        let values = parse(arguments, flags: [])
        guard let directory = values["--dir"] else { throw LoadGenError("prepare needs --dir") }
        try BenchSetup.prepare(in: directory)
        print(directory + "/" + BenchSetup.configFile)
    case "run":
        let values = parse(arguments, flags: ["--dirty"])
        var options = BenchRun.Options()
        (options.directory, options.port, options.gatewayPid) = try gatewayTarget(values, command: "run")
        options.gatewayCPU = value(values, "--gateway-cpu", { Int($0) }, default: options.gatewayCPU)
        options.clientCPU = value(values, "--client-cpu", { Int($0) }, default: options.clientCPU)
        options.brokerCPU = value(values, "--broker-cpu", { Int($0) }, default: options.brokerCPU)
        options.connections = value(values, "--connections", { Int($0).flatMap { $0 > 0 ? $0 : nil } }, default: options.connections)
        options.openConnections = value(values, "--open-connections", { Int($0).flatMap { $0 > 0 ? $0 : nil } }, default: options.openConnections)
        options.warmupSeconds = value(values, "--warmup", { Double($0) }, default: options.warmupSeconds)
        options.closedSeconds = value(values, "--seconds", { Double($0) }, default: options.closedSeconds)
        options.openSeconds = value(values, "--open-seconds", { Double($0) }, default: options.openSeconds)
        options.sources = value(values, "--sources", { $0.split(separator: ",").map(String.init) }, default: options.sources)
        options.output = values["--json"] ?? options.output
        options.commit = values["--commit"]
        options.dirty = values["--dirty"] != nil ? true : (options.commit == nil ? nil : false)
        options.perfDirectory = values["--perf-dir"]
        let results = try BenchRun(options: options).run()
        try writeResults(results, to: options.output)
        ResultsTable.print(results)
        exit(results.valid ? 0 : 1)
    case "soak":
        let values = parse(arguments, flags: [])
        var options = SoakRun.Options()
        (options.directory, options.port, options.gatewayPid) = try gatewayTarget(values, command: "soak")
        options.gatewayCPU = value(values, "--gateway-cpu", { Int($0) }, default: options.gatewayCPU)
        options.clientCPU = value(values, "--client-cpu", { Int($0) }, default: options.clientCPU)
        options.perSecond = value(values, "--rate", { Double($0).flatMap { $0 > 0 ? $0 : nil } }, default: options.perSecond)
        options.seconds = value(values, "--seconds", { Double($0).flatMap { $0 > 0 ? $0 : nil } }, default: options.seconds)
        options.sources = value(values, "--sources", { $0.split(separator: ",").map(String.init) }, default: options.sources)
        options.output = values["--json"] ?? options.output
        options.commit = values["--commit"]
        let results = try SoakRun(options: options).run()
        try writeResults(results, to: options.output)
        SoakRun.print(results)
        exit(results.valid && results.flat ? 0 : 1)
    case "cold-start":
        let values = parse(arguments, flags: ["--ignore-readiness"])
        var options = ColdStartRun.Options()
        options.ignoreReadiness = values["--ignore-readiness"] != nil
        guard let directory = values["--dir"], let tollgate = values["--tollgate"], let brokers = values["--brokers"] else {
            throw LoadGenError("cold-start needs --dir, --tollgate and --brokers")
        }
        (options.directory, options.tollgate, options.brokers) = (directory, tollgate, brokers)
        options.gatewayCPU = value(values, "--gateway-cpu", { Int($0) }, default: options.gatewayCPU)
        options.clientCPU = value(values, "--client-cpu", { Int($0) }, default: options.clientCPU)
        options.connections = value(values, "--connections", { Int($0).flatMap { $0 > 0 ? $0 : nil } }, default: options.connections)
        options.seconds = value(values, "--seconds", { Double($0).flatMap { $0 > 0 ? $0 : nil } }, default: options.seconds)
        options.pidFile = values["--pid-file"]
        let result = try ColdStartRun(options: options).run()
        if let path = values["--json"] { try mergeResults(result, as: "cold_start", into: path) }
        exit(result.errors == 0 ? 0 : 1)
    case "purchases":
        let values = parse(arguments, flags: [])
        var options = BenchRun.Options()
        (options.directory, options.port, options.gatewayPid) = try gatewayTarget(values, command: "purchases")
        options.gatewayCPU = value(values, "--gateway-cpu", { Int($0) }, default: options.gatewayCPU)
        options.clientCPU = value(values, "--client-cpu", { Int($0) }, default: options.clientCPU)
        options.connections = value(values, "--connections", { Int($0).flatMap { $0 > 0 ? $0 : nil } }, default: options.connections)
        options.closedSeconds = value(values, "--seconds", { Double($0) }, default: options.closedSeconds)
        options.openSeconds = value(values, "--open-seconds", { Double($0) }, default: options.openSeconds)
        let result = try PurchasesRun.run(options: options)
        let apple = result.apple
        // `--as purchases_dev`: the same load against `tollgate dev` (its broker on the same core).
        let key = values["--as"] ?? "purchases"
        let process = key == "purchases" ? "tollgate work" : "tollgate dev"
        let cpu = apple.cpuSecondsPerThousand * 1000
        print("\(key) (POST /v1/purchases, Apple signed transactions, \(process) on one core): \(Int(apple.requestsPerSec)) req/s\(apple.requestsPerSec >= 4_000 ? "" : " !"), "
              + "p50 \(apple.p50Ms) ms, p99 \(apple.p99Ms) ms, p99 at half load \(apple.p99MsAtHalfLoad) ms\(apple.p99MsAtHalfLoad < 20 ? "" : " !"), "
              + "\(cpu) us CPU per request\(cpu <= 200 ? "" : " !"); raw ES256 \(Int(result.rawVerify.es256PerSecond))/s on that core")
        print("  targets: >= 4,000 req/s in the closed loop, p99 < 20 ms at half of it, <= 200 us CPU per request (! = missed)")
        for problem in result.problems { print("  problem: \(problem)") }
        if let path = values["--json"] { try mergeResults(result, as: key, into: path) }
        exit(result.valid ? 0 : 1)
    case "report":
        let values = parse(arguments, flags: [])
        guard let path = values["--json"] else { throw LoadGenError("report needs --json") }
        try MicroBenchmarks.merge(results: path, verifiers: values["--verifiers"], projection: values["--projection"], webhooks: values["--webhooks"])
    default:
        FileHandle.standardError.write(Data(usage.utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("tollgate-load: \(error)\n".utf8))
    exit(1)
}
