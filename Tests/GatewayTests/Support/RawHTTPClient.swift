import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A deliberately small HTTP/1.1 client over a blocking socket, so tests control every byte:
/// announced lengths, chunked bodies, bodies that never finish. Runs off the Swift pool.
struct RawHTTPClient {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    let port: Int

    func request(_ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil) async throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.utf8.count)\r\n" }
        head += "\r\n"
        return try await exchange([Array(head.utf8) + Array((body ?? "").utf8)])
    }

    /// Sends `parts` one after another (e.g. headers, then chunks), then reads the whole response.
    func exchange(_ parts: [[UInt8]]) async throws -> Response {
        try await offPool { try blockingExchange(parts) }
    }

    private func blockingExchange(_ parts: [[UInt8]]) throws -> Response {
        guard let fd = LoopbackSocket.connect(port: port) else { throw ClientError("connect failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // The server may answer and close before it has read everything (413): stop sending then.
        outer: for part in parts {
            var offset = 0
            while offset < part.count {
                let sent = part[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { break outer }
                offset += sent
            }
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
            if let response = Self.parse(received), response.complete { return response.response }
        }
        guard let response = Self.parse(received) else { throw ClientError("no HTTP response (\(received.count) bytes)") }
        return response.response
    }

    static func parse(_ bytes: [UInt8]) -> (response: Response, complete: Bool)? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = lines.first, statusLine.count >= 12, let status = Int(statusLine.dropFirst(9).prefix(3)) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = String(text[split.upperBound...])
        let length = headers["content-length"].flatMap(Int.init) ?? 0
        return (Response(status: status, headers: headers, body: body), body.utf8.count >= length)
    }

    /// A chunked-encoding frame.
    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        Array(String(bytes.count, radix: 16).utf8) + [13, 10] + bytes + [13, 10]
    }
}

struct ClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
