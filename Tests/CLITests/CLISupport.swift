import Foundation
import TestSupport

/// Runs the built `tollgate` binary (from the same build folder as these tests).
enum CLI {
    static let binary: URL = {
        // The test bundle sits next to the products in .build/<config>/.
        var url = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = url.appendingPathComponent("tollgate")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            url = url.deletingLastPathComponent()
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return packageRoot.appendingPathComponent(".build/debug/tollgate")
    }()

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `tollgate` in `directory` (the temporary folder unless given: operator commands find the
    /// store and `.tollgate/bootstrap` of a `tollgate dev` relative to the folder it runs in).
    static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
                    directory: URL = FileManager.default.temporaryDirectory) async throws -> Result {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TOLLGATE_") }
        env.merge(environment) { $1 }
        let result = try await Subprocess.run(binary.path, arguments, stdin: Data((stdin ?? "").utf8), environment: env,
                                              directory: directory)
        return Result(status: result.status, stdout: result.output, stderr: result.stderr)
    }

    /// A file in a fresh temporary folder.
    static func temporaryFile(_ name: String, _ contents: String) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try Data(contents.utf8).write(to: url)
        return url.path
    }
}
