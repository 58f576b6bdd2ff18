import Events

/// One delivery as it arrived: the exact body bytes (never re-serialized), headers and path.
public struct WebhookRequest: Sendable {
    public var path: String
    public var headers: HeaderFields
    public var body: [UInt8]
    public var receivedAt: Timestamp
    /// "Now" for time checks; `tollgate verify --at` sets it.
    public var now: Timestamp

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

/// Request headers with case-insensitive lookup.
public struct HeaderFields: Sendable {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first(where: { $0.name.lowercased() == lowered })?.value
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        let lowered = name.lowercased()
        return fields.filter { $0.name.lowercased() == lowered }.map(\.value)
    }

    public mutating func append(name: String, value: String) { fields.append((name, value)) }
}
