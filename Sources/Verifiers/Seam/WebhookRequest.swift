import Events
import Rejections
import Toolkit

/// One delivery as it arrived: the exact body bytes (never re-serialized), headers and path.
public struct WebhookRequest: Sendable {
    public var path: String
    public var headers: HeaderFields
    public var body: [UInt8]
    public var receivedAt: Timestamp
    /// "Now" for time checks; `tollgate verify --at` sets it.
    public var now: Timestamp
    /// Set only on a delivery read back from its raw topic: the `AcceptedDelivery.authenticatedScope`
    /// the gateway recorded when it arrived. Never read from the request itself.
    public var authenticatedScope: String?

    public init(path: String, headers: HeaderFields, body: [UInt8], receivedAt: Timestamp, now: Timestamp? = nil) {
        self.path = path
        self.headers = headers
        self.body = body
        self.receivedAt = receivedAt
        self.now = now ?? receivedAt
    }

    /// A header that may appear at most once (credentials, signatures, the content type). Two
    /// copies are refused rather than one picked, so a proxy and the verifier cannot each read a
    /// different one.
    public func singleHeader(_ name: String) throws(Rejection) -> String? {
        let values = headers.values(name)
        guard values.count <= 1 else { throw Rejection(.duplicateHeader, "the \(name) header appears \(values.count) times") }
        return values.first
    }
}
