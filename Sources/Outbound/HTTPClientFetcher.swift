import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import Toolkit

/// The gateway's outbound HTTP (OCSP responders, key sets, the store and provider APIs), on
/// AsyncHTTPClient with an event loop thread of its own, with the system's CA certificates.
/// Each request has a hard deadline, and its body a bound checked while it streams in: an endpoint that
/// answers without end, or more than it announces, costs at most the bound, because the connection is
/// closed as soon as the bound is passed (a cancelled task closes it too). Redirects are not followed:
/// the 3xx is the answer, so a bearer token never goes to another host and a key set never moves from
/// https to http.
public struct HTTPClientFetcher: HTTPFetcher {
    /// One client for the process: connections are pooled across fetchers, and a client that is never
    /// released needs no shutdown.
    private static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
        // A refused connection is the answer (a network error, retried by the caller's own loop), not
        // something to retry until the deadline and report as a timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        // Its own event loop thread: outbound calls neither wait behind the process's servers (whose
        // handlers share the singleton group) nor hold them up.
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup(numberOfThreads: 1), configuration: configuration)
    }()

    private let maxBodyBytes: Int

    public init(maxBodyBytes: Int = 1 << 20) {
        self.maxBodyBytes = maxBodyBytes
    }

    public func fetch(_ request: HTTPFetchRequest) async throws(HTTPFetchError) -> HTTPFetchResponse {
        guard let scheme = request.url.split(separator: ":", maxSplits: 1).first?.lowercased(), scheme == "http" || scheme == "https" else {
            throw HTTPFetchError("not an http(s) URL: \(request.url)")
        }
        var outbound = HTTPClientRequest(url: request.url)
        outbound.method = HTTPMethod(rawValue: request.method)
        for header in request.headers { outbound.headers.add(name: header.name, value: header.value) }
        if !request.body.isEmpty { outbound.body = .bytes(ByteBuffer(bytes: request.body)) }
        let prepared = outbound
        let limit = min(request.maxResponseBytes ?? maxBodyBytes, maxBodyBytes)
        let timeout = request.timeout
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000

        // The deadline covers the answer's head; the race below covers its body too. Cancelling the
        // loser closes the connection.
        let outcome: Result<HTTPFetchResponse, HTTPFetchError> = await withTaskGroup(of: Result<HTTPFetchResponse, HTTPFetchError>?.self) { group in
            group.addTask {
                do {
                    let response = try await Self.client.execute(prepared, deadline: .now() + .nanoseconds(nanoseconds))
                    let body = try await response.body.collect(upTo: limit)
                    var headers = HeaderFields()
                    for header in response.headers { headers.append(name: header.name, value: header.value) }
                    return .success(HTTPFetchResponse(status: Int(response.status.code), headers: headers, body: Array(buffer: body)))
                } catch is NIOTooManyBytesError {
                    return .failure(HTTPFetchError("response over \(limit) bytes"))
                } catch let error as HTTPClientError where error == .deadlineExceeded {
                    return nil
                } catch {
                    return .failure(HTTPFetchError(Self.describe(error)))
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(HTTPFetchError("timed out after \(timeout)"))
        }
        return try outcome.get()
    }

    /// What went wrong, without the request (no URL, header or body reaches a message).
    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "HTTP client: \(error)" }
        if let error = error as? IOError { return "I/O: \(error.description)" }
        return String(describing: type(of: error)) + ": \(error)"
    }
}
