import Foundation

/// Runs `body` repeatedly for about `seconds` on the calling task; returns operations per second.
/// Every case, the raw one included, is called the same way (async), so the ratios stay fair.
func rate(seconds: Double, _ body: () async -> Bool) async -> Double {
    var count = 0
    let start = DispatchTime.now().uptimeNanoseconds
    let budget = UInt64(seconds * 1e9)
    var elapsed: UInt64 = 0
    repeat {
        for _ in 0..<64 {
            guard await body() else { fatalError("benchmark operation failed") }
        }
        count += 64
        elapsed = DispatchTime.now().uptimeNanoseconds - start
    } while elapsed < budget
    return Double(count) / (Double(elapsed) / 1e9)
}

/// Alternates the measurements `rounds` times (the host is noisy) and keeps each one's best.
func interleaved(rounds: Int, seconds: Double, _ cases: [(String, () async -> Bool)]) async -> [String: Double] {
    var best: [String: Double] = [:]
    for _ in 0..<rounds {
        for (name, body) in cases { best[name] = max(best[name] ?? 0, await rate(seconds: seconds, body)) }
    }
    return best
}

/// `openssl speed`'s own figure, for reference beside our EVP-based raw rate.
func opensslSpeed(_ algorithm: String, seconds: Int) -> Double? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = ["speed", "-seconds", String(seconds), algorithm]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    // "256 bits ecdsa (nistp256)   0.0000s   0.0001s  40000.0   7000.0": the last column is verify/s.
    guard let line = output.split(separator: "\n").last(where: { $0.contains("nistp256") || $0.contains("rsa") }) else { return nil }
    return line.split(separator: " ").last.flatMap { Double($0) }
}
