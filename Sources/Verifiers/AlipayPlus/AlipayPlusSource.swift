import Config
import Events
import ProviderAPIs
import Rejections
import Toolkit

/// Alipay+ / Antom `notifyPayment`: `Signature` (SHA256withRSA) over
/// `POST <path>\n<Client-Id>.<Request-Time>.<raw body>`, verified with the platform public keys
/// configured for that `Client-Id`. The answer is signed with the merchant key when one is configured.
public struct AlipayPlusSource: WebhookSource {
    public let name = SourceName.alipayplus
    public let mediaTypes: [MediaType] = [.json]
    private let clients: [String: AntomAccount]
    private let requestTimeWindow: RequestTimeWindow

    /// What Antom and Alipay+ expect back, whatever the payment's outcome; anything else is retried.
    public static let responseBody = #"{"result":{"resultCode":"SUCCESS","resultStatus":"S","resultMessage":"success"}}"#

    public init(settings: AlipayPlusSettings) throws(ConfigError) {
        self.init(clients: Array(try Self.antomAccounts(settings).values), requestTimeWindow: RequestTimeWindow(maxAgeSeconds: settings.maxRequestAgeSeconds,
                                                                         maxSkewSeconds: settings.maxRequestClockSkewSeconds))
    }

    init(clients: [AntomAccount], requestTimeWindow: RequestTimeWindow = RequestTimeWindow()) {
        self.clients = Dictionary(clients.map { ($0.clientId, $0) }, uniquingKeysWith: { first, _ in first })
        self.requestTimeWindow = requestTimeWindow
    }

    public func accept(_ request: WebhookRequest) throws(Rejection) -> AcceptedDelivery {
        guard let clientId = try request.singleHeader("client-id"), !clientId.isEmpty else {
            throw Rejection(.missingField, "the Client-Id header is missing")
        }
        guard let client = clients[clientId] else {
            throw Rejection(.unknownClient, "Client-Id \(clientId) is not configured")
        }
        guard let requestTime = try request.singleHeader("request-time"), !requestTime.isEmpty else {
            throw Rejection(.missingField, "the Request-Time header is missing")
        }
        let header = try AlipayPlusSignatureHeader(try request.singleHeader("signature"))
        let keys = try client.keys(for: header.keyVersion)
        let content = AntomSignature.signedContent(path: request.path, clientId: clientId, time: requestTime, body: request.body)
        guard keys.contains(where: { $0.verifyRSASHA256(message: content, signature: header.signature) }) else {
            throw Rejection(.badSignature, "the Signature does not verify with the platform keys of this Client-Id for POST \(request.path)")
        }
        // The time is signed, so only now does it say when the platform sent this.
        try requestTimeWindow.check(requestTime, now: request.now)

        guard let body = JSONValue.parse(request.body)?.object else {
            throw Rejection(.malformedJSON, "the body is not a JSON object")
        }
        var event = try AlipayPlusNormalizer(clientId: clientId, body: body, receivedAt: request.receivedAt).event()
        if client.environment == .sandbox { event.environment = .sandbox }
        return AcceptedDelivery(events: [event], rawKey: event.subject,
                                response: response(client: client, path: request.path, time: request.receivedAt))
    }

    /// The event Antom's `notifyRefund` gives for a refund that Antom's signed `refund` answer (S)
    /// already reports done: built by the same normalizer, so it has the notification's id and
    /// whichever arrives first applies while the other is a duplicate.
    public static func refundSucceeded(clientId: String, answer: [String: JSONValue], environment: NormalizedEvent.Environment,
                                       receivedAt: Timestamp) throws(Rejection) -> NormalizedEvent {
        var body = answer
        body["notifyType"] = .string(AlipayPlusNormalizer.refundNotifyType)
        body["refundStatus"] = .string("SUCCESS")
        var event = try AlipayPlusNormalizer(clientId: clientId, body: body, receivedAt: receivedAt).event()
        event.environment = environment
        return event
    }

    private func response(client: AntomAccount, path: String, time: Timestamp) -> SenderResponse {
        let body = Array(Self.responseBody.utf8)
        var response = SenderResponse(contentType: "application/json", body: body)
        guard let merchantKey = client.merchantKey else { return response }
        let responseTime = time.rfc3339
        // The key signed a probe at start-up, so only an allocation failure lands here; the senders
        // do not require signed notification answers, so an unsigned one beats a retry storm.
        guard let signature = merchantKey.signRSASHA256(AntomSignature.signedContent(path: path, clientId: client.clientId,
                                                                           time: responseTime, body: body)) else {
            return response
        }
        response.headers = [
            SenderResponse.Header(name: "Client-Id", value: client.clientId),
            SenderResponse.Header(name: "Response-Time", value: responseTime),
            SenderResponse.Header(name: "Signature", value: AntomSignature.header(signature: signature,
                                                                                           keyVersion: client.merchantKeyVersion)),
        ]
        return response
    }
}

/// How far a signed `Request-Time` may be from the gateway's clock: a delivery captured on the way
/// and sent again later verifies like the original, and this bounds for how long.
struct RequestTimeWindow: Sendable {
    /// 0: no check.
    var maxAgeSeconds = 90_000
    var maxSkewSeconds = 300

    func check(_ requestTime: String, now: Timestamp) throws(Rejection) {
        guard maxAgeSeconds > 0 else { return }
        guard let sent = AntomSignature.signedTime(requestTime) else {
            throw Rejection(.invalidField, "Request-Time is neither RFC 3339 nor epoch milliseconds, so its age cannot be checked")
        }
        let ageMs = now.millisecondsSince1970 - sent.millisecondsSince1970
        if ageMs > Int64(maxAgeSeconds) * 1000 {
            throw Rejection(.requestTimeOutsideWindow,
                            "Request-Time is \(ageMs / 1000) s old, more than sources.alipayplus.maxRequestAgeSeconds (\(maxAgeSeconds))")
        }
        if -ageMs > Int64(maxSkewSeconds) * 1000 {
            throw Rejection(.requestTimeOutsideWindow,
                            "Request-Time is \(-ageMs / 1000) s ahead of this gateway's clock, more than sources.alipayplus.maxRequestClockSkewSeconds (\(maxSkewSeconds))")
        }
    }

}
