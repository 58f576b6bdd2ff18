import Events
import Toolkit
import Verifiers

/// The headers of a raw record besides its CloudEvents ones: the kept request headers (`http_<name>`),
/// when and where the delivery arrived. Written by `DeliveryRecordBuilder`, read back here for `tollgate replay`,
/// so the format lives in one place.
public enum RawDeliveryHeaders {
    static let requestHeaderPrefix = "http_"
    static let receivedAt = "tollgate_received_at"
    static let path = "tollgate_path"
    /// `AcceptedDelivery.authenticatedScope`, written by the gateway (never copied from the request).
    static let authenticatedScope = "tollgate_authenticated_scope"

    /// The delivery as it arrived: the exact body, the kept request headers, path and time (the
    /// record's timestamp when the header is missing).
    public static func request(body: [UInt8], headers: [(name: String, value: String?)], timestampMs: Int64?,
                               source: SourceName) -> WebhookRequest {
        var fields = HeaderFields()
        var received: Timestamp?
        var path: String?
        var scope: String?
        for header in headers {
            if header.name.hasPrefix(requestHeaderPrefix) {
                fields.append(name: String(header.name.dropFirst(requestHeaderPrefix.count)), value: header.value ?? "")
            } else if header.name == receivedAt {
                received = header.value.flatMap(Timestamp.init(rfc3339:))
            } else if header.name == Self.path {
                path = header.value
            } else if header.name == authenticatedScope {
                scope = header.value
            }
        }
        let arrival = received ?? timestampMs.map(Timestamp.init(millisecondsSince1970:)) ?? Timestamp.now
        var request = WebhookRequest(path: path ?? WebhookRoutes.path(source), headers: fields, body: body, receivedAt: arrival)
        request.authenticatedScope = scope
        return request
    }
}
