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
}

/// Request headers with case-insensitive lookup.
public struct HeaderFields: Sendable {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

    public subscript(name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first(where: { $0.name.lowercased() == lowered })?.value
    }

    public mutating func append(name: String, value: String) { fields.append((name, value)) }
}
