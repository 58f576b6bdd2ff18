#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A listening TCP socket on 127.0.0.1 and a port the kernel chose: the base of the tests' small
/// servers, and on its own a peer that accepts connections but never answers.
public final class LoopbackListener: @unchecked Sendable {
    public let fd: Int32
    public let port: Int
    private let closed = Atomic<Bool>(false)

    public init(backlog: Int32 = 64) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var reuse: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        listen(fd, backlog)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// A port that was free a moment ago, for a server started by another program.
    public static func freePort() -> Int {
        let listener = LoopbackListener()
        defer { listener.close() }
        return listener.port
    }

    /// Closes the socket once: closing a descriptor twice could close another test's socket that
    /// reused its number in between.
    public func close() {
        guard closed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    deinit { close() }
}
