import AsyncHTTPClient
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import Toolkit

/// HTTP to merchants' webhook endpoints: each request goes to the address it is given (the one delivery
/// resolved and checked), never to what a second name lookup would say, so a name that answers a public
/// address to the check and a private one to the connection reaches nothing it must not. The
/// certificate is still verified against the URL's host name. One client per host and address, its
/// connections reused; redirects are never followed (a 3xx is the answer).
public final class EndpointHTTPClient: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let tls: TLSConfiguration
    private let maxBodyBytes: Int
    /// Per host: the address its client connects to, and the client.
    private let clients = Mutex<[String: (address: String, client: HTTPClient)]>([:])
    /// Replaced clients until they are closed (180 s later, or at `shutdown`).
    private let retired = Mutex<[ObjectIdentifier: HTTPClient]>([:])

    /// `extraRootsFile`: PEM certificates trusted besides the system's roots.
    public init(extraRootsFile: String?, maxBodyBytes: Int = 65_536, threads: Int = 2) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let extraRootsFile { tls.additionalTrustRoots = [.file(extraRootsFile)] }
        self.tls = tls
        self.maxBodyBytes = maxBodyBytes
        group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
    }

    /// POSTs `body` to `url`, connecting to one of `addresses` (IP literals, each checked): the one its
    /// connections already go to while it is among them, else the first.
    public func post(url: String, host: String, addresses: [String], headers: [(name: String, value: String)], body: [UInt8],
                     timeout: Duration, maxResponseBytes: Int) async throws(HTTPFetchError) -> HTTPFetchResponse {
        guard !addresses.isEmpty else { throw HTTPFetchError("no address to connect to") }
        let fetcher = HTTPClientFetcher(client: client(host: host, addresses: addresses), maxBodyBytes: maxBodyBytes)
        var request = HTTPFetchRequest(url: url, method: "POST", headers: headers, body: body, timeout: timeout, maxResponseBytes: maxResponseBytes)
        // The status decides; a long answer is quoted, not refused.
        request.truncatesResponse = true
        return try await fetcher.fetch(request)
    }

    /// The host's client, kept while its address is among the name's (a name rotating its answers keeps
    /// its connections); one whose address went gets a new client, and the old is closed once what it
    /// carries is done.
    private func client(host: String, addresses: [String]) -> HTTPClient {
        let (client, replaced) = clients.withLock { clients -> (HTTPClient, HTTPClient?) in
            if let kept = clients[host], addresses.contains(kept.address) { return (kept.client, nil) }
            let address = addresses[0]
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow, decompression: .disabled)
            configuration.dnsOverride = [host: address]
            configuration.connectionPool.retryConnectionEstablishment = false
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 32
            let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
            let replaced = clients[host]?.client
            if let replaced { retired.withLock { $0[ObjectIdentifier(replaced)] = replaced } }
            clients[host] = (address, client)
            return (client, replaced)
        }
        if let replaced {
            Task {
                try? await Task.sleep(for: .seconds(180))
                // Unless `shutdown` took it first.
                if retired.withLock({ $0.removeValue(forKey: ObjectIdentifier(replaced)) }) != nil { try? await replaced.shutdown() }
            }
        }
        return client
    }

    /// Closes every connection (at the end of the process's delivery service).
    public func shutdown() async {
        let all = clients.withLock { clients in
            defer { clients = [:] }
            return clients.values.map(\.client)
        } + retired.withLock { retired in
            defer { retired = [:] }
            return Array(retired.values)
        }
        for client in all { try? await client.shutdown() }
        try? await group.shutdownGracefully()
    }
}

/// The system's name lookup (getaddrinfo) off the async threads: every address a name has, as IP literals.
public enum HostResolver {
    public static func addresses(of host: String, port: Int) async -> [String] {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: lookup(host, port: port)) }
        }
    }

    static func lookup(_ host: String, port: Int) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [String] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if let address = info.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var a = v4.pointee.sin_addr
                        _ = inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count))
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var a = v6.pointee.sin6_addr
                        _ = inet_ntop(AF_INET6, &a, &buffer, socklen_t(buffer.count))
                    }
                default: break
                }
            }
            let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !text.isEmpty, !addresses.contains(text) { addresses.append(text) }
            cursor = info.pointee.ai_next
        }
        return addresses
    }
}
