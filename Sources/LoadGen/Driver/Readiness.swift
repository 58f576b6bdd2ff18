import Glibc

/// Waits until the gateway answers `GET /readyz` with 200 (Kafka reachable, every sender able to
/// verify), so the first timed requests do not meet a producer still connecting.
enum Readiness {
    static func wait(port: UInt16, seconds: Double) throws {
        let deadline = Clock.now() + UInt64(seconds * 1e9)
        var last = "no answer"
        while Clock.now() < deadline {
            if let status = try? status(port: port, path: "/readyz") {
                if status == 200 { return }
                last = "HTTP \(status)"
            }
            usleep(100_000)
        }
        throw LoadGenError("the gateway on port \(port) was not ready within \(Int(seconds)) s (/readyz: \(last))")
    }

    /// One blocking GET on a fresh connection.
    private static func status(port: UInt16, path: String) throws -> Int? {
        let fd = try Connection.open(port: port)
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == request.count else { return nil }
        var parser = ResponseParser()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { return nil }
            buffer.withUnsafeBytes { parser.feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            if let response = try parser.next(keepExcerpt: false) { return response.status }
        }
    }
}
