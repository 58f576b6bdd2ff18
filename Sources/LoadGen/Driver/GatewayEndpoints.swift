import Glibc

/// The gateway's own endpoints, read with one blocking GET each between timed runs: `/readyz`
/// before starting, `/metrics` after each sender to check where its deliveries went.
enum GatewayEndpoints {
    /// Waits until `/readyz` answers 200 (Kafka reachable, every sender able to verify), so the first
    /// timed requests do not meet a producer still connecting.
    static func waitUntilReady(port: UInt16, seconds: Double) throws {
        let deadline = Clock.now() + UInt64(seconds * 1e9)
        var last = "no answer"
        while Clock.now() < deadline {
            if let answer = try? get(port: port, path: "/readyz") {
                if answer.status == 200 { return }
                last = "HTTP \(answer.status)"
            }
            usleep(100_000)
        }
        throw LoadGenError("the gateway on port \(port) was not ready within \(Int(seconds)) s (/readyz: \(last))")
    }

    /// `tollgate_deliveries_written_total` by outcome (`published`, `spooled`, `duplicate`) for `source`.
    /// A 2xx means durable either way, but a bench whose deliveries went to the spool or were
    /// answered as duplicates did not measure the Kafka path.
    static func deliveriesWritten(port: UInt16, source: String) throws -> [String: Int] {
        let answer = try get(port: port, path: "/metrics")
        guard answer.status == 200 else { throw LoadGenError("/metrics answered \(answer.status)") }
        var counts: [String: Int] = [:]
        let prefix = "tollgate_deliveries_written_total{"
        for line in answer.body.split(separator: "\n") where line.hasPrefix(prefix) && line.contains("source=\"\(source)\"") {
            guard let start = line.range(of: "outcome=\"")?.upperBound, let end = line[start...].firstIndex(of: "\""),
                  let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            counts[String(line[start..<end])] = Int(value)
        }
        return counts
    }

    /// One GET on a fresh blocking connection; the body as text.
    static func get(port: UInt16, path: String) throws -> (status: Int, body: String) {
        let fd = try Connection.open(port: port)
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == request.count else {
            throw LoadGenError("GET \(path): write failed")
        }
        var parser = ResponseParser()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { throw LoadGenError("GET \(path): no complete answer") }
            buffer.withUnsafeBytes { parser.feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            if let response = try parser.next(keeping: Int.max) {
                let text = String(decoding: response.bytes, as: UTF8.self)
                let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
                return (response.status, body)
            }
        }
    }
}
