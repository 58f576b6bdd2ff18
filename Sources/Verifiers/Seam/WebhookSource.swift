import Events
import Rejections
import Toolkit

/// The one seam for senders: the gateway, `tollgate verify` and replay all call `accept`,
/// so they cannot disagree about what is authentic or how it normalizes.
public protocol WebhookSource: Sendable {
    var name: SourceName { get }
    /// The specific media types the route takes; anything else specific is a 415.
    var mediaTypes: [MediaType] { get }
    /// Verifies the exact bytes received and normalizes them. Async because some checks may need
    /// an injected fetch (OCSP, a key set refresh); the sender code itself does no I/O.
    func accept(_ request: WebhookRequest) async throws(Rejection) -> AcceptedDelivery
    /// Why this sender cannot accept deliveries right now (e.g. a key set that could not be loaded),
    /// or nil; `/readyz` reports it. May do the sender's own start-up work, through its injected fetcher.
    func readinessProblem(now: Timestamp) async -> String?
    /// Verifies a delivery read back from its raw topic (`tollgate replay`): the checks of `accept`, except
    /// those whose inputs the raw topic never keeps (credentials such as Google's OIDC token, which the
    /// gateway checked before writing the record).
    func reverify(_ request: WebhookRequest) async throws(Rejection) -> AcceptedDelivery
}

extension WebhookSource {
    public func readinessProblem(now: Timestamp) async -> String? { nil }
    public func reverify(_ request: WebhookRequest) async throws(Rejection) -> AcceptedDelivery { try await handle(request) }
}

extension WebhookSource {
    /// The content-type rule, then the sender's own verification.
    public func handle(_ request: WebhookRequest) async throws(Rejection) -> AcceptedDelivery {
        let contentType = try request.singleHeader("content-type")
        let mediaType = MediaType(contentType: contentType)
        if mediaType != .generic, !mediaTypes.contains(mediaType) {
            throw Rejection(.unsupportedMediaType, "content type \(contentType ?? "") is not accepted here")
        }
        return try await accept(request)
    }
}

/// A verified delivery: the events to publish and the answer the sender expects.
public struct AcceptedDelivery: Sendable {
    public var events: [NormalizedEvent]
    /// Key of the raw record (the first event's subject, or a sender-level id).
    public var rawKey: String
    public var response: SenderResponse
    /// Set when the delivery is authentic but cannot be normalized and the sender must still get a
    /// 2xx (Google: a non-2xx slows the whole Pub/Sub subscription). It goes to the quarantine topic
    /// instead of the raw and events topics.
    public var quarantine: Quarantine?
    /// The body the raw topic and the spool keep when it is not the exact bytes received: the
    /// request's without the credential it carried (Iaptic's `password`). Nil keeps the exact bytes.
    /// No credential ever reaches a topic or the spool.
    public var keptBody: [UInt8]?
    /// Who the credential authenticated, when `reverify` cannot tell from what is kept (Iaptic: the
    /// app whose secret matched the removed `password`). Kept beside the raw record and handed back
    /// to `reverify` as `WebhookRequest.authenticatedScope`.
    public var authenticatedScope: String?

    public init(events: [NormalizedEvent], rawKey: String, response: SenderResponse, quarantine: Quarantine? = nil) {
        self.events = events
        self.rawKey = rawKey
        self.response = response
        self.quarantine = quarantine
    }
}

/// Why an authentic delivery was quarantined: a stable code and a message for people.
public struct Quarantine: Sendable, Equatable {
    public var reason: String
    public var message: String

    public init(reason: String, message: String) {
        self.reason = reason
        self.message = message
    }
}

/// The 2xx answer a sender expects; anything else makes it retry.
public struct SenderResponse: Sendable, Equatable {
    /// One response header, in the order the sender's protocol lists them.
    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var status: Int
    public var contentType: String?
    /// Headers beyond `Content-Type`, e.g. Alipay+'s signed `Client-Id`, `Response-Time`, `Signature`.
    public var headers: [Header]
    public var body: [UInt8]

    public init(status: Int = 200, contentType: String? = nil, headers: [Header] = [], body: [UInt8] = []) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    public static func text(_ text: String) -> SenderResponse {
        SenderResponse(contentType: "text/plain", body: Array(text.utf8))
    }

    public static func json(_ text: String) -> SenderResponse {
        SenderResponse(contentType: "application/json", body: Array(text.utf8))
    }
}
