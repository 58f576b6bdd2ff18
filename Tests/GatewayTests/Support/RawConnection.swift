import Foundation
import Synchronization
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// One connection kept open across calls, for tests that pace what they send: a request held
/// half-sent, a head trickled byte by byte, a client that goes silent or hangs up mid-body.
/// Blocking socket calls run on Dispatch, off the Swift pool; every wait has a hang guard.
final class RawConnection: Sendable {
    private let fd: Int32
    /// Bytes received and not yet returned as a response (keep-alive).
    private let pending = Mutex<[UInt8]>([])
    private let closed = Atomic<Bool>(false)

    init(port: Int) throws {
        guard let fd = LoopbackSocket.connect(port: port) else { throw ClientError("connect to 127.0.0.1:\(port) failed") }
        self.fd = fd
    }

    deinit { close() }

    /// A request head; `Content-Length` is given by the caller when there is a body.
    static func head(_ method: String = "POST", _ path: String = "/webhooks/iaptic", _ headers: [(String, String)]) -> String {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        return head + "\r\n"
    }

    /// Sends everything; false when the server has closed the connection.
    @discardableResult
    func send(_ text: String) async -> Bool { await send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) async -> Bool {
        await offPool { [fd] in
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    /// Sends `bytes` one at a time, `interval` apart, until the server answers or closes; then reads the answer.
    func trickle(_ bytes: [UInt8], interval: Duration) async throws -> RawHTTPClient.Response? {
        let milliseconds = Int32(interval.components.seconds * 1_000 + interval.components.attoseconds / 1_000_000_000_000_000)
        let answered = await offPool { [fd] in
            for byte in bytes {
                let sent = withUnsafeBytes(of: byte) { Glibc.send(fd, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { return true }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, milliseconds) > 0 { return true }
            }
            return false
        }
        guard answered else { return nil }
        return try await readResponse()
    }

    /// The next response, or nil if the connection ends first; fails after `timeout` (a hang guard).
    func readResponse(timeout: Duration = .seconds(30)) async throws -> RawHTTPClient.Response? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let response = takeResponse() { return response }
            guard let more = try await receive(until: deadline) else { return nil }
            pending.withLock { $0 += more }
        }
    }

    /// True when the server closes the connection (end of stream or reset) within `timeout`; bytes
    /// that still arrive are discarded.
    func waitForClose(timeout: Duration = .seconds(30)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard try await receive(until: deadline) != nil else { return true }
        }
        return false
    }

    /// Hangs up (a FIN, then the socket is gone).
    func close() {
        if !closed.exchange(true, ordering: .relaxed) { Glibc.close(fd) }
    }

    /// Bytes that arrived before `deadline`; nil at end of stream or reset; throws when the deadline passes.
    private func receive(until deadline: ContinuousClock.Instant) async throws -> [UInt8]? {
        let left = deadline - ContinuousClock.now
        let milliseconds = max(1, Int32(left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000))
        let result: [UInt8]?? = await offPool { [fd] in
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, milliseconds) > 0 else { return .some(nil) }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = recv(fd, &buffer, buffer.count, 0)
            return count > 0 ? .some(Array(buffer[0..<count])) : .none
        }
        switch result {
        case .none: return nil
        case .some(nil): throw ClientError("no answer within the hang guard")
        case .some(let bytes?): return bytes
        }
    }

    private func takeResponse() -> RawHTTPClient.Response? {
        pending.withLock { bytes in
            guard let (response, complete) = RawHTTPClient.parse(bytes), complete,
                  let headEnd = bytes.firstRange(of: [13, 10, 13, 10]) else { return nil }
            let length = response.headers["content-length"].flatMap(Int.init) ?? 0
            bytes.removeFirst(min(bytes.count, headEnd.upperBound + length))
            return response
        }
    }

}
