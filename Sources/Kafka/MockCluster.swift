import CRdKafka
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// librdkafka's in-process mock cluster: a real Kafka-protocol broker on loopback ports that any
/// client (ours, `kcat`) can use. For development and tests only: it keeps everything in memory.
public final class MockCluster: Sendable {
    /// The mock cluster lives inside a client handle of its own, which only this type uses.
    nonisolated(unsafe) private let host: OpaquePointer
    nonisolated(unsafe) private let cluster: OpaquePointer
    public let brokerCount: Int
    public let bootstrapServers: String

    public init(brokers: Int = 1) throws(KafkaError) {
        // log_level 4 keeps the host handle's "no bootstrap.servers" notice out of the logs.
        let host = try RDKafkaConfig.makeHandle(type: RD_KAFKA_PRODUCER, properties: ["log_level": "4", "client.id": "tollgate-mock-cluster"])
        guard let cluster = rd_kafka_mock_cluster_new(host, Int32(brokers)) else {
            rd_kafka_destroy(host)
            throw KafkaError(kind: .configuration, message: "could not start the mock cluster")
        }
        self.host = host
        self.cluster = cluster
        self.brokerCount = brokers
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        answerWithoutNagle()
    }

    /// The ports the brokers listen on.
    var ports: Set<UInt16> {
        Set(bootstrapServers.split(separator: ",").compactMap { $0.split(separator: ":").last.flatMap { UInt16($0) } })
    }

    /// Sets TCP_NODELAY on the brokers' listening sockets, which the connections they accept inherit. The
    /// mock's sockets keep Nagle's algorithm, so an answer written while the previous one was not yet
    /// acknowledged waited for the client's delayed ACK: 40 ms (Linux's minimum), which held a request's
    /// produce acknowledgement back whenever the producer had several requests in flight
    /// (docs/performance.md). Kafka's brokers set it on every connection.
    private func answerWithoutNagle() {
        #if os(Linux)
        let ports = ports
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for entry in entries {
            guard let fd = Int32(entry) else { continue }
            // The listener has no peer; it may not listen yet (the mock's thread calls listen), but it is bound.
            guard let port = Self.localIPv4Port(fd), ports.contains(port), !Self.hasPeer(fd) else { continue }
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        #endif
    }

    #if os(Linux)
    /// The local port of an IPv4 socket; nil for anything else.
    static func localIPv4Port(_ fd: Int32) -> UInt16? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Whether the socket is connected (an accepted connection has a peer, a listener none).
    static func hasPeer(_ fd: Int32) -> Bool {
        var peer = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        } == 0
    }
    #endif

    /// The cluster must go before its host handle.
    deinit {
        rd_kafka_mock_cluster_destroy(cluster)
        rd_kafka_destroy(host)
    }

    /// Creates a topic directly in the mock (its controller does not serve the admin API).
    public func createTopic(_ name: String, partitions: Int = 3, replicationFactor: Int? = nil) throws(KafkaError) {
        let err = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(replicationFactor ?? brokerCount))
        if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
            throw KafkaError(code: err, context: "create mock topic \(name)")
        }
    }

    /// Broker ids run from 1 to `brokerCount`.
    public func setBroker(_ id: Int, up: Bool) {
        if up { _ = rd_kafka_mock_broker_set_up(cluster, Int32(id)) }
        else { Self.listenerHandover.withLock { _ in _ = rd_kafka_mock_broker_set_down(cluster, Int32(id)) } }
        // Going down binds the listener again.
        answerWithoutNagle()
    }

    /// Taking a broker down closes its listener and binds the same port again at once to keep it
    /// (librdkafka 2.0.2), and aborts the process if that bind fails. A child process being started
    /// holds a copy of every descriptor of ours until it execs, the listener with them, so the port is
    /// still taken. Children are started, and brokers taken down, one at a time (set_down returns once
    /// the mock's thread has bound again; `Process.run` once the child has exec'd).
    private static let listenerHandover = Mutex(())

    /// Starts a child process (`start` calls `Process.run`) while no broker of this process is going down.
    public static func startingChildProcess(_ start: () throws -> Void) throws {
        try listenerHandover.withLock { _ in try start() }
    }

    public func setAllBrokers(up: Bool) {
        for id in 1...brokerCount { setBroker(id, up: up) }
    }

    // Fault injection, for the durability tests.

    /// Errors a broker can answer a request with.
    public enum InjectedError: Sendable {
        case notEnoughReplicas, requestTimedOut, notLeaderForPartition
        /// The broker drops the connection instead of answering.
        case disconnect

        var code: rd_kafka_resp_err_t {
            switch self {
            case .notEnoughReplicas: RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS
            case .requestTimedOut: RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT
            case .notLeaderForPartition: RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION
            case .disconnect: RD_KAFKA_RESP_ERR__TRANSPORT
            }
        }
    }

    /// Kafka protocol ApiKey of Produce requests (librdkafka's RD_KAFKAP_Produce is not in its public headers).
    private static let produceApiKey: Int16 = 0

    /// The next `errors.count` Produce requests (to any broker) fail with these errors, in order.
    public func failNextProduceRequests(_ errors: [InjectedError]) {
        let codes = errors.map(\.code)
        codes.withUnsafeBufferPointer { buffer in
            rd_kafka_mock_push_request_errors_array(cluster, Self.produceApiKey, buffer.count, buffer.baseAddress)
        }
    }

    /// Delays every answer of every broker by `milliseconds` (0 restores).
    public func setRoundTripTime(milliseconds: Int) {
        _ = rd_kafka_mock_broker_set_rtt(cluster, -1, Int32(milliseconds))
    }

    /// Moves a partition's leadership to another broker (or none, with -1).
    public func setLeader(topic: String, partition: Int32, broker: Int) {
        _ = rd_kafka_mock_partition_set_leader(cluster, topic, partition, Int32(broker))
    }
}
