import Dispatch
import Verifiers

/// Pre-serialized HTTP/1.1 requests back to back in one buffer. The driver writes slices of it, so
/// sending a request allocates nothing and costs the client only the `write`.
struct RequestArena {
    private(set) var bytes: [UInt8] = []
    /// Where each request ends in `bytes`; request `i` starts where `i - 1` ends.
    private(set) var ends: [Int] = []

    var count: Int { ends.count }

    func range(_ index: Int) -> Range<Int> { (index == 0 ? 0 : ends[index - 1])..<ends[index] }

    mutating func append(_ request: [UInt8]) {
        bytes += request
        ends.append(bytes.count)
    }

    /// Request `index` of another arena.
    mutating func append(_ other: RequestArena, _ index: Int) {
        bytes += other.bytes[other.range(index)]
        ends.append(bytes.count)
    }

    /// A GET without a body, repeated `count` times (the client's own ceiling against `/healthz`).
    static func repeated(get path: String, host: String, count: Int) -> RequestArena {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host)\r\n\r\n".utf8)
        var arena = RequestArena()
        arena.bytes.reserveCapacity(request.count * count)
        for _ in 0..<count { arena.append(request) }
        return arena
    }

    /// Deliveries `first ..< first + count` of `traffic`, signed on every core (RSA signing is slow,
    /// and this happens before the timed run, while the gateway is idle).
    static func generate(_ traffic: SenderTraffic, first: Int, count: Int, run: String, host: String) -> RequestArena {
        let chunk = 256
        let chunks = (count + chunk - 1) / chunk
        var pieces = [[[UInt8]]](repeating: [], count: chunks)
        pieces.withUnsafeMutableBufferPointer { slots in
            let slots = UncheckedSendable(slots)
            DispatchQueue.concurrentPerform(iterations: chunks) { index in
                let lower = index * chunk, upper = min(count, lower + chunk)
                slots.value[index] = (lower..<upper).map { serialize(traffic.request(first + $0, run: run), host: host) }
            }
        }
        var arena = RequestArena()
        arena.bytes.reserveCapacity(pieces.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } })
        arena.ends.reserveCapacity(count)
        for piece in pieces { for request in piece { arena.append(request) } }
        return arena
    }

    static func serialize(_ parts: LoadRequest, host: String) -> [UInt8] {
        var head = "POST \(parts.path) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in parts.headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(parts.body.count)\r\n\r\n"
        return Array(head.utf8) + parts.body
    }
}

/// Each concurrent iteration writes its own slot only.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
