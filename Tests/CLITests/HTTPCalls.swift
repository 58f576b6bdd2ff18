import Foundation
import TestSupport

/// HTTP through curl, a child process run off the pool (the tests never block a pool thread).
enum HTTP {
    struct Response: Sendable {
        var status: Int
        var body: String
        var data: Data { Data(body.utf8) }
    }

    static func request(_ method: String, _ url: String, headers: [String: String] = [:], body: String? = nil) async throws -> Response {
        var arguments = ["-sS", "--max-time", "10", "-X", method, "-w", "\n%{http_code}"]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["-H", "\(name): \(value)"] }
        if body != nil { arguments += ["--data-binary", "@-"] }
        arguments.append(url)
        let result = try await Subprocess.run("/usr/bin/curl", arguments, stdin: body.map { Data($0.utf8) })
        let output = result.output
        guard result.status == 0, let newline = output.lastIndex(of: "\n"), let status = Int(output[output.index(after: newline)...]) else {
            throw HTTPFailure(description: "curl \(method) \(url) failed (\(result.status)): \(result.stderr)")
        }
        return Response(status: status, body: String(output[..<newline]))
    }

    struct HTTPFailure: Error, CustomStringConvertible {
        let description: String
    }
}
