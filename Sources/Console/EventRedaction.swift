import Entitlements
import Foundation

/// What an operator's page may show of an event: a Google event's subject is its purchase token, some of
/// its ids carry one (a voided purchase's), and a refund review carries Google's pending refund token.
/// Those are credentials of the customer's purchase: pages show the purchase id (`pur_...`) and the event
/// id's MAC (`evt_...`, as outbound webhooks do) instead, and never the refund token.
public enum EventRedaction {
    /// The one sender whose events name their purchase by a token (Google's catalog name; the console knows no senders).
    static let tokenSender = "google"

    /// Whether an event from this CloudEvents source (`/google/<package>`) names its purchase by token.
    public static func namesPurchaseByToken(source: String) -> Bool { source.hasPrefix("/\(tokenSender)/") }

    /// The event id as a page shows it, by the event's CloudEvents source (`/google/<package>`) or, as the
    /// purchase history keeps it, its sender's name (`google`).
    public static func eventId(_ id: String, source: String, ids: PurchaseIds) -> String {
        namesPurchaseByToken(source: source) || source == tokenSender ? ids.eventId(id) : id
    }

    /// The event's JSON, indented for reading, with a Google event's subject as its purchase id, its id as
    /// its MAC and no refund token. Text that is not a JSON object is shown only when it is not Google's.
    public static func prettyEvent(_ json: String, ids: PurchaseIds) -> String {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else {
            return json.contains("/\(tokenSender)/") ? "(\(json.utf8.count) bytes withheld: they may hold a purchase token)" : json
        }
        if let source = object["source"] as? String, namesPurchaseByToken(source: source) {
            if let app = object["app"] as? String, let subject = object["subject"] as? String {
                let environment = object["environment"] as? String ?? "production"
                object["subject"] = ids.id(source: tokenSender, app: app, environment: environment, subject: subject)
            }
            if let id = object["id"] as? String { object["id"] = ids.eventId(id) }
            if var review = object["refundReview"] as? [String: Any], review["pendingRefundToken"] != nil {
                review["pendingRefundToken"] = "(withheld)"
                object["refundReview"] = review
            }
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return json }
        return String(decoding: data, as: UTF8.self)
    }
}
