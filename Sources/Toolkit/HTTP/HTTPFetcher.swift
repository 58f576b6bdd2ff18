/// Outbound HTTP for the few checks that need the network (OCSP responders, key sets).
/// Senders only see this protocol, so the sender code stays free of I/O and tests can
/// point it at local servers; the gateway injects the real client.
public protocol HTTPFetcher: Sendable {
    func fetch(_ request: HTTPFetchRequest) async throws(HTTPFetchError) -> HTTPFetchResponse
}

public struct HTTPFetchRequest: Sendable {
    public var url: String
    public var method: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var timeout: Duration
    /// The largest response body accepted (below the fetcher's own bound); a larger one fails the
    /// fetch as soon as it passes the bound, while it streams in.
    public var maxResponseBytes: Int?
    /// Keep only the first `maxResponseBytes` of a longer body rather than fail (a webhook endpoint's
    /// answer: its status decides, its body is only quoted).
    public var truncatesResponse = false

    public init(url: String, method: String = "GET", headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                timeout: Duration, maxResponseBytes: Int? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }
}

public struct HTTPFetchResponse: Sendable {
    public var status: Int
    public var headers: HeaderFields
    public var body: [UInt8]

    public init(status: Int, headers: HeaderFields = HeaderFields(), body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// The request never got an HTTP answer (bad URL, refused, timed out, too large).
public struct HTTPFetchError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
