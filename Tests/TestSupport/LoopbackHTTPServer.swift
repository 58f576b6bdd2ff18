import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on a loopback port, for playing a remote service in tests. Each
/// connection gets its own thread (never the Swift concurrency pool) and one request, answered by
/// `respond` and closed; when `respond` returns nil the connection is held unanswered until `stop()`.
public final class LoopbackHTTPServer: @unchecked Sendable {
    public struct Request: Sendable {
        public var method: String
        /// The request target exactly as sent, percent-escapes included.
        public var target: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    public struct Reply: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)] = []
        public var body: [UInt8]

        public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        public static func json(_ status: Int = 200, _ text: String) -> Reply {
            Reply(status: status, headers: [("Content-Type", "application/json; charset=UTF-8")], body: Array(text.utf8))
        }
    }

    public let port: Int
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    private let listener = LoopbackListener()
    private let respond: @Sendable (Request) -> Reply?
    // Held-open connections wait on this until `stop()`.
    private let stopped = NSCondition()
    private var isStopped = false

    public init(respond: @escaping @Sendable (Request) -> Reply?) {
        self.respond = respond
        port = listener.port
        Thread { [self] in acceptLoop() }.start()
    }

    public func stop() {
        stopped.lock()
        isStopped = true
        stopped.broadcast()
        stopped.unlock()
        // Shut down, not closed: the accept loop wakes and ends, and the listener's deinit closes the
        // descriptor once. Closing here too would let a second close hit a descriptor number another
        // test's socket has since been given.
        shutdown(listener.fd, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener.fd, nil, nil)
            if client < 0 { return }
            Thread { [self] in
                serve(client)
                close(client)
            }.start()
        }
    }

    private func serve(_ client: Int32) {
        guard let request = read(client) else { return }
        guard let reply = respond(request) else {
            stopped.lock()
            while !isStopped { stopped.wait() }
            stopped.unlock()
            return
        }
        var head = "HTTP/1.1 \(reply.status) Status\r\nContent-Length: \(reply.body.count)\r\nConnection: close\r\n"
        for (name, value) in reply.headers { head += "\(name): \(value)\r\n" }
        write(client, Array((head + "\r\n").utf8) + reply.body)
    }

    /// The request line, headers and a Content-Length body; nil if the peer went away first.
    private func read(_ client: Int32) -> Request? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let separator = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            let count = recv(client, &buffer, buffer.count, 0)
            if count <= 0 || received.count > 65_536 { return nil }
            received += buffer[0..<count]
            headEnd = received.indices.dropLast(3).first { received[$0..<$0 + 4].elementsEqual(separator) }
        }
        guard let headEnd else { return nil }
        let lines = String(decoding: received[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var request = Request(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers, body: [])
        let length = request.header("Content-Length").flatMap { Int($0) } ?? 0
        if request.header("Expect")?.lowercased() == "100-continue" {
            write(client, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        var body = Array(received[(headEnd + 4)...])
        while body.count < length {
            let count = recv(client, &buffer, buffer.count, 0)
            if count <= 0 { return nil }
            body += buffer[0..<count]
        }
        request.body = Array(body.prefix(length))
        return request
    }

    private func write(_ client: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }
}
