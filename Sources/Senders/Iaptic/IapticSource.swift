import Config
import Events
import Toolkit

/// Iaptic (Fovea) purchase webhooks: `{"type": "purchases.updated" | "test", "password", ...}`.
/// Authenticity is the shared `password`, checked in constant time against every configured secret.
public struct IapticSource: WebhookSource {
    public let name = SourceName.iaptic
    public let mediaTypes: [MediaType] = [.json]
    private let apps: [IapticSettings.App]

    public init(settings: IapticSettings) {
        apps = settings.apps
    }

    public func accept(_ request: WebhookRequest) throws(Rejection) -> AcceptedDelivery {
        guard let body = JSONValue.parse(request.body), let object = body.object else {
            throw Rejection(.malformedJSON, "the body is not a JSON object")
        }
        let app = try authenticate(object["password"])
        guard let type = object["type"]?.string else {
            throw Rejection(.missingField, "type is missing or not a string")
        }
        try Self.checkTypes(object)
        let normalizer = IapticNormalizer(app: app, body: body, rawBody: request.body, receivedAt: request.receivedAt)
        let events: [NormalizedEvent]
        switch type.lowercased() {
        case "test": events = [normalizer.testEvent()]
        case "purchases.updated": events = try normalizer.purchaseEvents()
        default: events = [normalizer.otherEvent(type: type)]
        }
        let rawKey = events.first?.subject ?? object["applicationUsername"]?.string ?? app
        return AcceptedDelivery(events: events, rawKey: rawKey, response: .json(#"{"ok":true}"#))
    }

    /// The types docs/openapi.yaml gives the body's fields, for every `type`: a value of another type is
    /// refused, never silently ignored.
    private static func checkTypes(_ body: [String: JSONValue]) throws(Rejection) {
        if let user = body["applicationUsername"], user.string == nil {
            throw Rejection(.invalidField, "applicationUsername is not a string")
        }
        if let value = body["notification"] {
            guard let notification = value.object else { throw Rejection(.invalidField, "notification is not an object") }
            for name in ["id", "reason", "date", "productId", "purchaseId", "transactionId"] where notification[name].map({ $0.string == nil }) ?? false {
                throw Rejection(.invalidField, "notification.\(name) is not a string")
            }
        }
        if let value = body["purchases"] {
            guard let purchases = value.object else { throw Rejection(.invalidField, "purchases must be an object keyed by product id") }
            for key in purchases.keys.sorted(by: UTF8Order.precedes) {
                guard let purchase = purchases[key]?.object else { throw Rejection(.invalidField, "purchases.\(key) must be an object") }
                guard let purchaseId = purchase["purchaseId"]?.string, !purchaseId.isEmpty else {
                    throw Rejection(.missingField, "purchases.\(key).purchaseId is missing or not a non-empty string")
                }
            }
        }
    }

    /// The name of the app whose secret equals `password`.
    private func authenticate(_ password: JSONValue?) throws(Rejection) -> String {
        guard let password = password?.string, !password.isEmpty else {
            throw Rejection(.missingPassword, "password is missing")
        }
        // Every secret of every app is compared, so timing reveals neither which app nor which secret.
        var matched: String?
        for app in apps where ConstantTime.firstMatch(password, in: app.secrets) != nil && matched == nil {
            matched = app.name
        }
        guard let matched else { throw Rejection(.wrongPassword, "password matches no configured Iaptic app") }
        return matched
    }
}
