import Foundation
import Gateway
import Kafka
import Logging
import Spool

/// What one spooled delivery costs: an append is an fsynced SQLite commit (WAL, synchronous=FULL),
/// shared by whatever appends arrive meanwhile (group commit). Measured one at a time (a lone sender
/// while Kafka is down) and with many concurrent senders.
struct SpoolBenchmark {
    struct Result {
        let mode: String
        let deliveries: Int
        let perSecond: Double
        let p50Ms: Double
        let p99Ms: Double
    }

    /// A delivery shaped like an Apple one: a ~4 KB raw body and a ~1 KB event, with headers.
    static func delivery(_ index: Int) -> [KafkaMessage] {
        let headers = (0..<12).map { KafkaHeader(name: "ce_header_\($0)", string: "value-\(index)-\($0)") }
        return [KafkaMessage(topic: "tollgate.raw.apple", key: "otx-\(index)", value: Array(repeating: 0x61, count: 4_096), headers: headers),
                KafkaMessage(topic: "tollgate.events", key: "otx-\(index)", value: Array(repeating: 0x62, count: 1_024), headers: headers)]
    }

    func run(directory: URL) async throws -> [Result] {
        var logger = Logger(label: "bench-spool")
        logger.logLevel = .warning
        let spool = try await DeliverySpool.open(path: directory.appendingPathComponent("spool.sqlite").path,
                                                 maxBytes: 1 << 34, logger: logger)
        var results: [Result] = []
        results.append(try await measure(spool, mode: "sequential (1 sender)", deliveries: 300, concurrency: 1))
        results.append(try await measure(spool, mode: "concurrent (64 senders)", deliveries: 6_400, concurrency: 64))
        await spool.close()
        return results
    }

    private func measure(_ spool: DeliverySpool, mode: String, deliveries: Int, concurrency: Int) async throws -> Result {
        let start = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
            for sender in 0..<concurrency {
                group.addTask {
                    var own: [Duration] = []
                    for index in stride(from: sender, to: deliveries, by: concurrency) {
                        let began = ContinuousClock.now
                        try await spool.append(Self.delivery(index))
                        own.append(ContinuousClock.now - began)
                    }
                    return own
                }
            }
            var all: [Duration] = []
            for try await own in group { all += own }
            return all.sorted()
        }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        func ms(_ quantile: Double) -> Double {
            let value = latencies[min(latencies.count - 1, Int(Double(latencies.count) * quantile))]
            return (Double(value.components.seconds) * 1e3 + Double(value.components.attoseconds) / 1e15 * 1_000).rounded() / 1_000
        }
        return Result(mode: mode, deliveries: deliveries, perSecond: Double(deliveries) / seconds, p50Ms: ms(0.5), p99Ms: ms(0.99))
    }
}

func runSpool(jsonPath: String?) async {
    do {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-bench-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let results = try await SpoolBenchmark().run(directory: directory)
        print("Spool appends (SQLite WAL, synchronous=FULL, group commit), ~5 KB deliveries, in \(directory.path)")
        print("")
        print(pad("mode", 28) + pad("deliveries", 12) + pad("per s", 10) + pad("p50 ms", 10) + "p99 ms")
        var rows: [[String: Any]] = []
        for result in results {
            print(pad(result.mode, 28) + pad(String(result.deliveries), 12) + pad(format(result.perSecond), 10)
                  + pad(String(format: "%.2f", result.p50Ms), 10) + String(format: "%.2f", result.p99Ms))
            rows.append(["mode": result.mode, "deliveries": result.deliveries, "deliveries_per_sec": result.perSecond.rounded(),
                         "p50_ms": result.p50Ms, "p99_ms": result.p99Ms])
        }
        if let jsonPath {
            let data = try JSONSerialization.data(withJSONObject: ["benchmark": "spool", "results": rows], options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: jsonPath))
        }
    } catch {
        FileHandle.standardError.write(Data("tollgate-bench: spool: \(error)\n".utf8))
        exit(1)
    }
}
