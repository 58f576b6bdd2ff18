import Foundation
import Toolkit

/// HTTP as Sileo (and its sign-in browser session) speaks it: curl, redirects not followed.
public enum SileoHTTP {
    public struct Answer: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: Data
        public var json: [String: JSONValue] { JSONValue.parse([UInt8](body))?.object ?? [:] }
        public var location: String { headers["location"] ?? "" }
    }

    public static func call(_ method: String, _ url: String, json: String? = nil, cookie: String? = nil, pathAsIs: Bool = false) async throws -> Answer {
        var arguments = ["-sS", "-i", "--max-time", "10", "-X", method]
        if pathAsIs { arguments.append("--path-as-is") }
        if let cookie { arguments += ["-H", "Cookie: \(cookie)"] }
        if json != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
        arguments.append(url)
        let result = try await Subprocess.run("/usr/bin/curl", arguments, stdin: json.map { Data($0.utf8) })
        guard result.status == 0 else { throw SileoHTTPFailure(description: "curl \(method) \(url): \(result.stderr)") }
        let output = [UInt8](result.stdout)
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, output.count - 3)).first(where: { Array(output[$0..<$0 + 4]) == separator }) else {
            throw SileoHTTPFailure(description: "no header end in the answer to \(url)")
        }
        let head = String(decoding: output[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = head.first, statusLine.split(separator: " ").count >= 2,
              let status = Int(statusLine.split(separator: " ")[1]) else { throw SileoHTTPFailure(description: "no status from \(url)") }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: headers, body: Data(output[(end + 4)...]))
    }

    public struct SileoHTTPFailure: Error, CustomStringConvertible {
        public let description: String
    }
}

