import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A minimal HTTP/1.1 server on a loopback port that answers every request with the current reply
/// and counts requests: Google's key endpoint, under the test's control. It runs on its own thread,
/// never on the Swift concurrency pool.
final class JWKSServer: @unchecked Sendable {
    struct Reply {
        var status = 200
        var headers: [(String, String)] = []
        var body: String
        /// Sends the body again and again, without a Content-Length, until the client goes away.
        var endless = false
    }

    let port: Int
    private let listener = LoopbackListener()
    private let lock = NSLock()
    private var reply: Reply
    private var requests = 0
    private var sentBodyBytes = 0

    var url: String { "http://127.0.0.1:\(port)/oauth2/v3/certs" }

    init(_ reply: Reply) {
        self.reply = reply
        port = listener.port
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// Google's answer: the key set with the caching headers its endpoint sends.
    static func google(_ body: String, maxAge: Int = 300) -> Reply {
        Reply(headers: [("Cache-Control", "public, max-age=\(maxAge), must-revalidate, no-transform"),
                        ("Expires", "Fri, 21 Nov 2025 18:00:00 GMT")], body: body)
    }

    func set(_ reply: Reply) { lock.withLock { self.reply = reply } }

    var requestCount: Int { lock.withLock { requests } }
    /// Body bytes written so far (an endless reply stops when the client closes).
    var bodyBytesSent: Int { lock.withLock { sentBodyBytes } }

    func stop() {
        listener.close()
    }

    private func serve() {
        while true {
            let client = accept(listener.fd, nil, nil)
            if client < 0 { return }
            handle(client)
            close(client)
        }
    }

    private func handle(_ client: Int32) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while received.count < 65_536 {
            let count = recv(client, &buffer, buffer.count, 0)
            if count <= 0 { return }
            received += buffer[0..<count]
            if String(decoding: received, as: UTF8.self).contains("\r\n\r\n") { break }
        }
        let reply = lock.withLock { () -> Reply in
            requests += 1
            return self.reply
        }
        let body = Array(reply.body.utf8)
        var head = "HTTP/1.1 \(reply.status) \(reply.status == 200 ? "OK" : "Error")\r\nContent-Type: application/json; charset=UTF-8\r\n"
        if !reply.endless { head += "Content-Length: \(body.count)\r\n" }
        head += "Connection: close\r\n"
        for (name, value) in reply.headers { head += "\(name): \(value)\r\n" }
        guard write(Array((head + "\r\n").utf8), to: client) else { return }
        repeat {
            guard write(body, to: client) else { return }
            lock.withLock { sentBodyBytes += body.count }
        } while reply.endless
    }

    private func write(_ bytes: [UInt8], to client: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }
}
