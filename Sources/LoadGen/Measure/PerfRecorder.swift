import Foundation

/// `perf record` of the gateway for one phase (`make profile`): cpu-clock samples with call stacks,
/// since this machine's hypervisor exposes no hardware counters. Runs on the client's core, so the
/// gateway's core carries only the gateway and the kernel's sampling interrupts.
struct PerfRecorder {
    private let process: Process

    static func start(pid: Int32, output: String, seconds: Double, onCPU cpu: Int) throws -> PerfRecorder {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        process.arguments = ["-c", String(cpu), "perf", "record", "--quiet", "-e", "cpu-clock", "-F", "999", "-g",
                             "-p", String(pid), "-o", output, "--", "sleep", String(format: "%.1f", seconds)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw LoadGenError("perf record did not start: \(error) (is linux-perf installed?)") }
        return PerfRecorder(process: process)
    }

    func finish() throws {
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw LoadGenError("perf record exited with \(process.terminationStatus)") }
    }
}
