import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Toolkit

/// The gateway's outbound HTTP (OCSP responders, key sets, the Play Developer API), on Foundation's
/// URLSession (libcurl on Linux, with the system's CA certificates). Each request has a hard deadline,
/// and its body a bound enforced while it streams in (`BoundedTransfers`): an endpoint that answers
/// without end, or far more than announced, costs at most the bound, never the whole answer.
public final class URLSessionFetcher: HTTPFetcher, @unchecked Sendable {
    // URLSession is thread-safe; the class holds nothing else mutable.
    private let session: URLSession
    private let transfers: BoundedTransfers
    private let maxBodyBytes: Int

    public init(maxBodyBytes: Int = 1 << 20) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        transfers = BoundedTransfers()
        session = URLSession(configuration: configuration, delegate: transfers, delegateQueue: nil)
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

        let limit = min(request.maxResponseBytes ?? maxBodyBytes, maxBodyBytes)
        let task = UncheckedTask(task: session.dataTask(with: urlRequest))
        let transfers = self.transfers
        let outcome: Result<BoundedTransfers.Received, HTTPFetchError> = await withTaskGroup(of: Result<BoundedTransfers.Received, HTTPFetchError>?.self) { group in
            group.addTask { await transfers.run(task, limit: limit) }
            group.addTask {
                try? await Task.sleep(for: request.timeout)
                return nil
            }
            let first = await group.next() ?? nil
            // The transfer ends (and its child returns) once its task is cancelled.
            task.task.cancel()
            group.cancelAll()
            return first ?? .failure(HTTPFetchError("timed out after \(request.timeout)"))
        }
        let received = try outcome.get()
        var headers = HeaderFields()
        for (name, value) in received.response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers.append(name: name, value: value) }
        }
        return HTTPFetchResponse(status: received.response.statusCode, headers: headers, body: [UInt8](received.body))
    }
}

/// A data task handed between the caller and the transfer's child task.
struct UncheckedTask: @unchecked Sendable {
    // URLSessionTask's methods are thread-safe; Foundation does not mark it Sendable.
    let task: URLSessionDataTask
}

/// The session's delegate: collects each task's body and cancels the task as soon as the body (or the
/// length the response announces) passes its bound.
final class BoundedTransfers: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `transfers` is only touched under `lock`.
    struct Received: Sendable {
        let response: HTTPURLResponse
        let body: Data
    }

    private struct Transfer {
        let limit: Int
        let continuation: CheckedContinuation<Result<Received, HTTPFetchError>, Never>
        var response: HTTPURLResponse?
        var body = Data()
        var tooLarge = false
    }

    private let lock = NSLock()
    private var transfers: [Int: Transfer] = [:]

    func run(_ task: UncheckedTask, limit: Int) async -> Result<Received, HTTPFetchError> {
        await withCheckedContinuation { continuation in
            lock.withLock { transfers[task.task.taskIdentifier] = Transfer(limit: limit, continuation: continuation) }
            task.task.resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let allow: Bool = lock.withLock {
            guard var transfer = transfers[dataTask.taskIdentifier] else { return false }
            transfer.response = response as? HTTPURLResponse
            if response.expectedContentLength > Int64(transfer.limit) { transfer.tooLarge = true }
            transfers[dataTask.taskIdentifier] = transfer
            return !transfer.tooLarge
        }
        completionHandler(allow ? .allow : .cancel)
    }

    /// Redirects are not followed: the 3xx itself is the answer. A redirect could take a bearer token to
    /// another host, or a key set from https to http.
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let overflow: Bool = lock.withLock {
            guard var transfer = transfers[dataTask.taskIdentifier], !transfer.tooLarge else { return false }
            if transfer.body.count + data.count > transfer.limit {
                transfer.tooLarge = true
                transfer.body = Data()
            } else {
                transfer.body.append(data)
            }
            transfers[dataTask.taskIdentifier] = transfer
            return transfer.tooLarge
        }
        if overflow { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = lock.withLock({ transfers.removeValue(forKey: task.taskIdentifier) }) else { return }
        let result: Result<Received, HTTPFetchError>
        if transfer.tooLarge {
            result = .failure(HTTPFetchError("response over \(transfer.limit) bytes"))
        } else if let error {
            result = .failure(HTTPFetchError(error.localizedDescription))
        } else if let response = transfer.response ?? (task.response as? HTTPURLResponse) {
            result = .success(Received(response: response, body: transfer.body))
        } else {
            result = .failure(HTTPFetchError("not an HTTP response"))
        }
        transfer.continuation.resume(returning: result)
    }
}
