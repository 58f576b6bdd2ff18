import Glibc

/// Another process's CPU time and memory, from /proc: the gateway's, whose pid the bench passes in.
struct ProcessProbe {
    let pid: Int32
    private let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    init(pid: Int32) { self.pid = pid }

    var alive: Bool { kill(pid, 0) == 0 }

    /// User plus system CPU seconds of all its threads so far (clock ticks, 10 ms on Linux).
    func cpuSeconds() -> Double? {
        // The command name, in parentheses, may hold spaces: the fields start after the last ')'.
        guard let stat = readProcFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After ')': state is field 3, utime 14 and stime 15 (proc(5)).
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / ticksPerSecond
    }

    /// Resident memory now and its peak (VmRSS, VmHWM), in KiB.
    func memory() -> (rss: Int, peak: Int)? {
        guard let status = readProcFile("/proc/\(pid)/status") else { return nil }
        var rss: Int?, peak: Int?
        for line in status.split(separator: "\n") {
            if line.hasPrefix("VmRSS:") { rss = Self.kib(line) }
            if line.hasPrefix("VmHWM:") { peak = Self.kib(line) }
        }
        guard let rss, let peak else { return nil }
        return (rss, peak)
    }

    /// Starts a new peak from the current resident size (writing 5 to clear_refs, Linux 4.0+), so
    /// each sender's peak is its own; false when not permitted, and the peak is then the process's.
    func resetPeak() -> Bool { writeProcFile("/proc/\(pid)/clear_refs", "5") }

    private static func kib(_ line: Substring) -> Int? {
        line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    }
}
