import Events
import Toolkit

/// A raw record read back as the request it was (`RawRecordHeaders` names its headers; `DeliveryRecordBuilder`
/// writes them), for `tollgate replay` and the console's re-verify.
public enum RawDeliveryHeaders {
    private typealias Names = RawRecordHeaders

    /// The delivery as it arrived: the exact body, the kept request headers, path and time (the
    /// record's timestamp when the header is missing).
    public static func request(body: [UInt8], headers: [(name: String, value: String?)], timestampMs: Int64?,
                               source: SourceName) -> WebhookRequest {
        var fields = HeaderFields()
        var received: Timestamp?
        var path: String?
        var scope: String?
        for header in headers {
            if header.name.hasPrefix(Names.requestHeaderPrefix) {
                fields.append(name: String(header.name.dropFirst(Names.requestHeaderPrefix.count)), value: header.value ?? "")
            } else if header.name == Names.receivedAt {
                received = header.value.flatMap(Timestamp.init(rfc3339:))
            } else if header.name == Names.path {
                path = header.value
            } else if header.name == Names.authenticatedScope {
                scope = header.value
            }
        }
        let arrival = received ?? timestampMs.map(Timestamp.init(millisecondsSince1970:)) ?? Timestamp.now
        var request = WebhookRequest(path: path ?? "/webhooks/\(source.rawValue)", headers: fields, body: body, receivedAt: arrival)
        request.authenticatedScope = scope
        return request
    }
}
