import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import Kafka
import Testing

/// The embedded broker answers without Nagle's algorithm, as Kafka's brokers do: a connection it accepts
/// has TCP_NODELAY, also after a broker went down and came back (its listener bound again).
@Suite("The embedded broker's connections")
struct MockClusterNagleTests {
    /// Sockets of this process whose local port is `port` and that accept nothing (accepted connections),
    /// with their TCP_NODELAY.
    static func acceptedNoDelay(port: UInt16) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
        var found: [Int32] = []
        for entry in entries {
            guard let fd = Int32(entry) else { continue }
            // Accepted: it has a peer (the listener has none).
            guard MockCluster.localIPv4Port(fd) == port, MockCluster.hasPeer(fd) else { continue }
            var noDelay: Int32 = -1
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, &length) == 0 else { continue }
            found.append(noDelay)
        }
        return found
    }

    /// Connects to 127.0.0.1:`port` (Nagle left as it is: the client side says nothing of the broker's).
    static func connect(port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        return fd
    }

    /// The mock accepts on its own thread: waits until the accepted side is there.
    static func accepted(port: UInt16) async throws -> [Int32] {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let found = acceptedNoDelay(port: port)
            if !found.isEmpty { return found }
            try await Task.sleep(for: .milliseconds(5))
        }
        return []
    }

    @Test("an accepted connection has TCP_NODELAY, before and after the broker went down and up")
    func noDelay() async throws {
        let cluster = try MockCluster()
        let port = try #require(cluster.ports.first)
        let first = Self.connect(port: port)
        defer { close(first) }
        #expect(try await Self.accepted(port: port) == [1])

        cluster.setBroker(1, up: false)
        cluster.setBroker(1, up: true)
        let second = Self.connect(port: port)
        defer { close(second) }
        let after = try await Self.accepted(port: port)
        #expect(!after.isEmpty && after.allSatisfy { $0 == 1 })
    }
}
