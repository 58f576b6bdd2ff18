import Glibc

/// One keep-alive connection to the gateway and the request it is working on.
struct Connection {
    var fd: Int32
    var busy = false
    /// The request being sent or awaited, as an index into the run's arena.
    var request = 0
    /// Bytes of that request already written.
    var written = 0
    /// When its latency started: the send time (closed loop) or the scheduled time (open loop).
    var start: UInt64 = 0
    var watchingWrites = false
    var parser = ResponseParser()

    init(fd: Int32) { self.fd = fd }

    /// A TCP connection to 127.0.0.1:`port`, Nagle off (requests go out whole at once), then non-blocking.
    static func open(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw LoadGenError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw LoadGenError("connect to 127.0.0.1:\(port): errno \(code)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }
}
