import Glibc

/// Per-core time from /proc/stat: how busy each core was during a run and how much the hypervisor
/// stole. The gateway's core busy beyond the gateway's own CPU time is someone else's work
/// (other builds on a shared machine), which makes that run's figures noisier.
struct CoreUsage {
    struct Core {
        var busy: Double
        var steal: Double
        var total: Double
    }

    let cores: [Int: Core]

    static func read() -> CoreUsage {
        var cores: [Int: Core] = [:]
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        for line in (readProcFile("/proc/stat") ?? "").split(separator: "\n") where line.hasPrefix("cpu") && !line.hasPrefix("cpu ") {
            let fields = line.split(separator: " ")
            guard let number = Int(fields[0].dropFirst(3)) else { continue }
            let values = fields.dropFirst().compactMap { Double($0) }.map { $0 / ticks }
            // user nice system idle iowait irq softirq steal ...
            guard values.count >= 8 else { continue }
            let busy = values[0] + values[1] + values[2] + values[5] + values[6]
            cores[number] = Core(busy: busy, steal: values[7], total: values.prefix(8).reduce(0, +))
        }
        return CoreUsage(cores: cores)
    }

    /// Busy and stolen seconds on `core` between `earlier` and this reading.
    func since(_ earlier: CoreUsage, core: Int) -> (busy: Double, steal: Double, total: Double)? {
        guard let now = cores[core], let then = earlier.cores[core] else { return nil }
        return (now.busy - then.busy, now.steal - then.steal, now.total - then.total)
    }
}
