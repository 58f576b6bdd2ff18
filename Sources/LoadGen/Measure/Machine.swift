import Glibc

/// What the figures were measured on.
struct Machine: Codable {
    var cpuModel: String
    var cores: Int
    var kernel: String
    /// /proc/loadavg when the run started: above the core count, other work shared the machine.
    var loadAverageAtStart: String

    static func current() -> Machine {
        let model = (readProcFile("/proc/cpuinfo") ?? "").split(separator: "\n")
            .first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { String($0).trimmingWhitespace } ?? "unknown"
        var names = utsname()
        uname(&names)
        let kernel = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let load = (readProcFile("/proc/loadavg") ?? "").split(separator: " ").prefix(3).joined(separator: " ")
        return Machine(cpuModel: model, cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), kernel: kernel, loadAverageAtStart: load)
    }
}
