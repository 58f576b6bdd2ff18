import AsyncHTTPClient
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Toolkit

/// The gateway's outbound HTTP (OCSP responders, key sets, the store and provider APIs), on
/// AsyncHTTPClient on event loop threads of its own, with the system's CA certificates.
/// Each request has a hard deadline, and its body a bound checked while it streams in: an endpoint that
/// answers without end, or more than it announces, costs at most the bound, because the exchange is
/// ended as soon as the bound is passed (an HTTP/1 connection closed, an HTTP/2 stream reset; a
/// cancelled task ends it too). Redirects are not followed:
/// the 3xx is the answer, so a bearer token never goes to another host and a key set never moves from
/// https to http.
public struct HTTPClientFetcher: HTTPFetcher {
    /// One client for the process: connections are pooled across fetchers, and a client that is never
    /// released needs no shutdown.
    private static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
        // A refused connection is the answer (a network error, retried by the caller's own loop), not
        // something to retry until the deadline and report as a timeout. (It fails every request then
        // waiting for that host; each caller has its retry path.)
        configuration.connectionPool.retryConnectionEstablishment = false
        // Event loop threads of its own: outbound calls neither wait behind the process's servers (whose
        // handlers share the singleton group) nor hold them up; two, so one slow name lookup or TLS
        // handshake does not hold every other connection.
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup(numberOfThreads: 2), configuration: configuration)
    }()

    private let maxBodyBytes: Int
    private let client: HTTPClient

    public init(maxBodyBytes: Int = 1 << 20) {
        self.init(client: Self.client, maxBodyBytes: maxBodyBytes)
    }

    /// Over another client (`EndpointHTTPClient`'s, pinned to one address).
    init(client: HTTPClient, maxBodyBytes: Int) {
        self.client = client
        self.maxBodyBytes = maxBodyBytes
    }

    public func fetch(_ request: HTTPFetchRequest) async throws(HTTPFetchError) -> HTTPFetchResponse {
        guard let scheme = request.url.split(separator: ":", maxSplits: 1).first?.lowercased(), scheme == "http" || scheme == "https" else {
            // Not the URL itself: a path may carry a purchase token.
            throw HTTPFetchError("not an http(s) URL")
        }
        var outbound = HTTPClientRequest(url: request.url)
        outbound.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { outbound.headers.add(name: header.name, value: header.value) }
        if !request.body.isEmpty { outbound.body = .bytes(ByteBuffer(bytes: request.body)) }
        let prepared = outbound
        let client = client
        let limit = max(0, min(request.maxResponseBytes ?? maxBodyBytes, maxBodyBytes))
        let timeout = request.timeout
        let truncates = request.truncatesResponse
        // With truncation, the answer's head and what came of its body: a 2xx whose body stalls is still a 2xx.
        let partial = PartialAnswer()

        // The deadline covers the answer's head; the race below covers its body too. Cancelling the
        // loser closes the connection.
        let outcome: Result<HTTPFetchResponse, HTTPFetchError> = await withTaskGroup(of: Result<HTTPFetchResponse, HTTPFetchError>?.self) { group in
            group.addTask {
                do {
                    let response = try await client.execute(prepared, deadline: .now() + TimeAmount(timeout))
                    var headers = HeaderFields()
                    for header in response.headers { headers.append(name: header.name, value: header.value) }
                    let body: ByteBuffer
                    if truncates {
                        partial.head(HTTPFetchResponse(status: Int(response.status.code), headers: headers, body: []))
                        var kept = ByteBuffer()
                        for try await chunk in response.body {
                            var chunk = chunk
                            kept.writeBuffer(&chunk)
                            partial.body(Array(buffer: kept.getSlice(at: kept.readerIndex, length: min(limit, kept.readableBytes)) ?? kept))
                            // Enough: leaving the loop ends the exchange (the connection closes).
                            if kept.readableBytes >= limit { break }
                        }
                        body = kept.getSlice(at: kept.readerIndex, length: min(limit, kept.readableBytes)) ?? kept
                    } else {
                        body = try await response.body.collect(upTo: limit)
                    }
                    return .success(HTTPFetchResponse(status: Int(response.status.code), headers: headers, body: Array(buffer: body)))
                } catch is NIOTooManyBytesError {
                    return .failure(HTTPFetchError("response over \(limit) bytes"))
                } catch let error as HTTPClientError where error == .deadlineExceeded {
                    return nil
                } catch {
                    // The head came and the body failed: with truncation, the head is the answer.
                    if let answered = partial.answer { return .success(answered) }
                    return .failure(HTTPFetchError(Self.describe(error)))
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            if first == nil, Task.isCancelled { return .failure(HTTPFetchError("cancelled")) }
            if first == nil, let answered = partial.answer { return .success(answered) }
            return first ?? .failure(HTTPFetchError("timed out after \(timeout)"))
        }
        return try outcome.get()
    }

    /// What went wrong, without the request: no URL, host, header or body reaches a message (an
    /// `HTTPClientError`'s full text may quote a header value; a connection error names the host).
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "HTTP client: \(error.shortDescription)" }
        if let error = error as? NIOConnectionError {
            let reasons = Set(error.connectionErrors.compactMap { ($0.error as? IOError).map { Self.reason($0.errnoCode) } })
            return "connection failed" + (reasons.isEmpty ? "" : ": " + reasons.sorted().joined(separator: ", "))
        }
        if let error = error as? IOError { return "I/O error: " + Self.reason(error.errnoCode) }
        return String(describing: type(of: error))
    }

    /// The system's text for an errno value ("Connection refused").
    private static func reason(_ code: CInt) -> String {
        strerror(code).map { String(cString: $0) } ?? "errno \(code)"
    }
}

/// A truncated answer as it arrives: its head, then its body so far.
private final class PartialAnswer: Sendable {
    private let state = Mutex<HTTPFetchResponse?>(nil)

    func head(_ response: HTTPFetchResponse) { state.withLock { $0 = response } }
    func body(_ bytes: [UInt8]) { state.withLock { $0?.body = bytes } }
    var answer: HTTPFetchResponse? { state.withLock { $0 } }
}
