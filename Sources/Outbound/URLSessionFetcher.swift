import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Toolkit

/// The gateway's outbound HTTP (OCSP responders, key sets), on Foundation's URLSession
/// (libcurl on Linux, with the system's CA certificates). Each request has a hard deadline.
public final class URLSessionFetcher: HTTPFetcher, @unchecked Sendable {
    // URLSession is thread-safe; the class holds nothing else mutable.
    private let session: URLSession
    private let maxBodyBytes: Int

    public init(maxBodyBytes: Int = 1 << 20) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
        self.maxBodyBytes = maxBodyBytes
    }

    deinit { session.finishTasksAndInvalidate() }

    public func fetch(_ request: HTTPFetchRequest) async throws(HTTPFetchError) -> HTTPFetchResponse {
        guard let url = URL(string: request.url), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw HTTPFetchError("not an http(s) URL: \(request.url)")
        }
        let seconds = Double(request.timeout.components.seconds) + Double(request.timeout.components.attoseconds) / 1e18
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        urlRequest.httpMethod = request.method
        for header in request.headers { urlRequest.setValue(header.value, forHTTPHeaderField: header.name) }
        if !request.body.isEmpty { urlRequest.httpBody = Data(request.body) }

        let session = self.session
        let prepared = urlRequest
        let outcome: Result<(Data, URLResponse), any Error> = await withTaskGroup(of: Result<(Data, URLResponse), any Error>?.self) { group in
            group.addTask { await Result { try await session.data(for: prepared) } }
            group.addTask {
                try? await Task.sleep(for: request.timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(HTTPFetchError("timed out after \(request.timeout)"))
        }
        let data: Data
        let response: URLResponse
        switch outcome {
        case .success(let pair): (data, response) = pair
        case .failure(let error as HTTPFetchError): throw error
        case .failure(let error): throw HTTPFetchError(error.localizedDescription)
        }
        guard let http = response as? HTTPURLResponse else { throw HTTPFetchError("not an HTTP response") }
        guard data.count <= maxBodyBytes else { throw HTTPFetchError("response over \(maxBodyBytes) bytes") }
        var headers = HeaderFields()
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers.append(name: name, value: value) }
        }
        return HTTPFetchResponse(status: http.statusCode, headers: headers, body: [UInt8](data))
    }
}

private extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
