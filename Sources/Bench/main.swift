import Foundation

// tollgate-bench [--seconds S] [--rounds R] [--json FILE]
// tollgate-bench --projection [--events N] [--json FILE]   (PostgreSQL too when BENCH_POSTGRES_URL is set)
// tollgate-bench --spool [--json FILE]                      (spool append cost on this disk)
// tollgate-bench --webhooks [--messages N] [--receiver-cpu C] --json FILE   (outbound webhook deliveries per second on this core)
// tollgate-bench --webhook-latency --tollgate BIN [--dev-cpu C] --json FILE (2xx -> delivery received at half FILE's rate; added to FILE)
// Run it pinned to one core (`taskset -c 1`): every figure is per core, and every ratio compares
// figures measured in this same run, because these machines are noisy.
var seconds = 2.0
var rounds = 3
var jsonPath: String?
var projection = false
var spool = false
var projectionEvents = 20_000
var webhooks = false
var webhookLatency = false
var webhookMessages = 20_000
var receiverCPU = 0
var devCPU = 1
var tollgateBinary: String?
var receiverFiles: (cert: String, key: String)?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--seconds": seconds = arguments.next().flatMap(Double.init) ?? seconds
    case "--rounds": rounds = arguments.next().flatMap(Int.init) ?? rounds
    case "--json": jsonPath = arguments.next()
    case "--projection": projection = true
    case "--spool": spool = true
    case "--events": projectionEvents = arguments.next().flatMap(Int.init) ?? projectionEvents
    case "--webhooks": webhooks = true
    case "--webhook-latency": webhookLatency = true
    case "--messages": webhookMessages = arguments.next().flatMap(Int.init) ?? webhookMessages
    case "--receiver-cpu": receiverCPU = arguments.next().flatMap(Int.init) ?? receiverCPU
    case "--dev-cpu": devCPU = arguments.next().flatMap(Int.init) ?? devCPU
    case "--tollgate": tollgateBinary = arguments.next()
    case "--webhook-receiver":
        var cert = "", key = ""
        while let option = arguments.next() {
            if option == "--cert" { cert = arguments.next() ?? "" } else if option == "--key" { key = arguments.next() ?? "" }
        }
        receiverFiles = (cert, key)
    default:
        FileHandle.standardError.write(Data("usage: tollgate-bench [--seconds S] [--rounds R] [--json FILE]\n".utf8))
        exit(2)
    }
}

if spool {
    await runSpool(jsonPath: jsonPath)
    exit(0)
}

if let receiverFiles {
    try await WebhookBenchmark.runReceiver(certFile: receiverFiles.cert, keyFile: receiverFiles.key)
    exit(0)
}

if webhooks {
    await runWebhooks(messages: webhookMessages, receiverCPU: receiverCPU, jsonPath: jsonPath)
    exit(0)
}

if webhookLatency {
    await runWebhookLatency(tollgate: tollgateBinary, devCPU: devCPU, jsonPath: jsonPath)
    exit(0)
}

if projection {
    await runProjection(events: projectionEvents, jsonPath: jsonPath)
    exit(0)
}

do {
    let apple = try await AppleBenchmark().run(seconds: seconds, rounds: rounds)
    print("Apple verifier, one core, warm chain cache (\(rounds) interleaved rounds of \(seconds) s, best of each)")
    print("")
    print(pad("case", 52) + pad("per s", 12) + pad("ES256/s", 12) + "vs raw")
    print(pad("raw ES256 verify (EVP_DigestVerify)", 52) + pad(format(apple.rawVerifiesPerSecond), 12) + pad(format(apple.rawVerifiesPerSecond), 12) + "1.00")
    if let speed = apple.opensslSpeedVerifiesPerSecond {
        print(pad("openssl speed ecdsap256 (reference)", 52) + pad(format(speed), 12) + pad(format(speed), 12) + String(format: "%.2f", speed / apple.rawVerifiesPerSecond))
    }
    var cases: [[String: Any]] = []
    for entry in apple.cases {
        let ratio = entry.perSecond * Double(entry.checks) / apple.rawVerifiesPerSecond
        print(pad(entry.name, 52) + pad(format(entry.perSecond), 12) + pad(format(entry.perSecond * Double(entry.checks)), 12) + String(format: "%.2f", ratio))
        cases.append(["case": entry.name, "notifications_per_sec": entry.perSecond.rounded(), "es256_checks": entry.checks,
                      "ratio_to_raw_verify": (ratio * 1000).rounded() / 1000])
    }
    print("")
    print("target: ratio >= 0.75 (everything but the ES256 checks costs under 25%)")

    let google = try await GoogleBenchmark().run(seconds: seconds, rounds: rounds)
    let googleRatio = google.pushesPerSecond / google.rawVerifiesPerSecond
    print("")
    print("Google verifier, one core (OIDC token RS256 + claims + envelope + RTDN + normalization)")
    print("")
    print(pad("case", 52) + pad("per s", 12) + "vs raw")
    print(pad("raw RS256 verify (EVP_DigestVerify, 2048 bits)", 52) + pad(format(google.rawVerifiesPerSecond), 12) + "1.00")
    if let speed = google.opensslSpeedVerifiesPerSecond {
        print(pad("openssl speed rsa2048 verify (reference)", 52) + pad(format(speed), 12) + String(format: "%.2f", speed / google.rawVerifiesPerSecond))
    }
    print(pad("verified push (wrapped, SUBSCRIPTION_RENEWED)", 52) + pad(format(google.pushesPerSecond), 12) + String(format: "%.2f", googleRatio))
    if let jsonPath {
        let document: [String: Any] = [
            "benchmark": "apple-verifier-micro", "seconds": seconds, "rounds": rounds,
            "raw_es256_verify_per_sec": apple.rawVerifiesPerSecond.rounded(),
            "openssl_speed_ecdsap256_verify_per_sec": apple.opensslSpeedVerifiesPerSecond ?? 0,
            "cases": cases,
            "google": [
                "raw_rs256_verify_per_sec": google.rawVerifiesPerSecond.rounded(),
                "openssl_speed_rsa2048_verify_per_sec": google.opensslSpeedVerifiesPerSecond ?? 0,
                "verified_pushes_per_sec": google.pushesPerSecond.rounded(),
                "ratio_to_raw_verify": (googleRatio * 1000).rounded() / 1000,
            ] as [String: Any],
        ]
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: jsonPath))
    }
} catch {
    FileHandle.standardError.write(Data("tollgate-bench: \(error)\n".utf8))
    exit(1)
}

func format(_ value: Double) -> String { String(Int(value.rounded())) }
func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count) }

func runProjection(events: Int, jsonPath: String?) async {
    do {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var results = [try await ProjectionBenchmark(events: events)
            .run(storeURL: "sqlite:" + directory.appendingPathComponent("store.sqlite").path, backend: "sqlite")]
        if let postgres = ProcessInfo.processInfo.environment["BENCH_POSTGRES_URL"] {
            results.append(try await ProjectionBenchmark(events: events).run(storeURL: postgres, backend: "postgres"))
        }
        print("Projection, broker in the loop (embedded broker in process, 3 partitions, batches of up to 500 per transaction)")
        print("")
        print(pad("store", 12) + pad("events", 10) + pad("seconds", 10) + pad("events/s", 12) + "target")
        var rows: [[String: Any]] = []
        for result in results {
            let target = result.backend == "sqlite" ? 20_000.0 : 10_000.0
            print(pad(result.backend, 12) + pad(String(result.events), 10) + pad(String(format: "%.2f", result.seconds), 10)
                  + pad(format(result.perSecond), 12) + ">= \(format(target))")
            rows.append(["store": result.backend, "events": result.events, "seconds": (result.seconds * 1000).rounded() / 1000,
                         "events_per_sec": result.perSecond.rounded(), "target_events_per_sec": target])
        }
        if let jsonPath {
            let data = try JSONSerialization.data(withJSONObject: ["benchmark": "projection", "results": rows],
                                                  options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: jsonPath))
        }
    } catch {
        FileHandle.standardError.write(Data("tollgate-bench: projection: \(error)\n".utf8))
        exit(1)
    }
}

func runWebhooks(messages: Int, receiverCPU: Int, jsonPath: String?) async {
    do {
        let throughput = try await WebhookBenchmark.throughput(messages: messages, receiverCPU: receiverCPU)
        print("Outbound webhooks: signed deliveries through the store (claimed, built, signed, HTTPS POST, recorded), one core, receiver on another")
        print("")
        print(pad("case", 52) + pad("per s", 12) + pad("per CPU s", 12) + "target")
        print(pad("deliveries, 1,000 entitlements, 64 in flight", 52) + pad(format(throughput.perSecond), 12)
              + pad(format(Double(throughput.deliveries) / throughput.cpuSeconds), 12) + ">= 3000")
        let document: [String: Any] = ["benchmark": "webhooks", "deliveries": throughput.deliveries,
                                       "deliveries_per_sec": throughput.perSecond.rounded(),
                                       "deliveries_per_cpu_sec": (Double(throughput.deliveries) / throughput.cpuSeconds).rounded(),
                                       "target_deliveries_per_sec": 3_000]
        if let jsonPath {
            let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: jsonPath))
        }
    } catch {
        FileHandle.standardError.write(Data("tollgate-bench: webhooks: \(error)\n".utf8))
        exit(1)
    }
}

func runWebhookLatency(tollgate: String?, devCPU: Int, jsonPath: String?) async {
    do {
        guard let tollgate, let jsonPath, var document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: jsonPath))) as? [String: Any],
              let rate = document["deliveries_per_sec"] as? Double, rate > 0 else {
            throw BenchError(description: "--webhook-latency needs --tollgate and the --json file --webhooks wrote")
        }
        let latency = try await WebhookBenchmark.latency(tollgate: tollgate, rate: rate / 2, seconds: 8, devCPU: devCPU)
        print("")
        print("Outbound webhooks: from an Iaptic callback's 2xx at tollgate dev (gateway, embedded broker, projection, dispatcher) to its")
        print("delivery arriving, open loop at half the rate above, for 8 s")
        print("")
        print(pad("rate/s", 10) + pad("sent", 10) + pad("arrived", 10) + pad("p50 ms", 10) + pad("p99 ms", 10) + "target")
        print(pad(format(latency.rate), 10) + pad(String(latency.sent), 10) + pad(String(latency.received), 10)
              + pad(String(format: "%.1f", latency.p50Ms), 10) + pad(String(format: "%.1f", latency.p99Ms), 10) + "p99 < 250")
        document["latency"] = ["rate_per_sec": latency.rate.rounded(), "sent": latency.sent, "arrived": latency.received,
                               "p50_ms": (latency.p50Ms * 10).rounded() / 10, "p99_ms": (latency.p99Ms * 10).rounded() / 10,
                               "target_p99_ms": 250] as [String: Any]
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: jsonPath))
    } catch {
        FileHandle.standardError.write(Data("tollgate-bench: webhook latency: \(error)\n".utf8))
        exit(1)
    }
}
