import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
    guard let output = runWithDefaultSignals("/usr/bin/openssl", ["speed", "-seconds", String(seconds), algorithm]) else { return nil }
    // "256 bits ecdsa (nistp256)   0.0000s   0.0001s  40000.0   7000.0": the last column is verify/s.
    guard let line = output.split(separator: "\n").last(where: { $0.contains("nistp256") || $0.contains("rsa") }) else { return nil }
    return line.split(separator: " ").last.flatMap { Double($0) }
}

/// Runs a program and returns its standard output. Spawned with an empty signal mask: a child
/// started from a Swift concurrency thread would otherwise inherit its blocked signals, and
/// `openssl speed`, which times itself with SIGALRM, would never stop.
func runWithDefaultSignals(_ path: String, _ arguments: [String]) -> String? {
    var pipe: [Int32] = [0, 0]
    guard Glibc.pipe(&pipe) == 0 else { return nil }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
    posix_spawn_file_actions_addclose(&actions, pipe[0])
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
    close(pipe[1])
    defer { close(pipe[0]) }
    guard spawned == 0 else { return nil }
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4_096)
    while true {
        let count = read(pipe[0], &buffer, buffer.count)
        if count <= 0 { break }
        output += buffer.prefix(count)
    }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return String(decoding: output, as: UTF8.self)
}
