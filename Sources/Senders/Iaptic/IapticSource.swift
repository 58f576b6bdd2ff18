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
        let normalizer = IapticNormalizer(app: app, body: body, rawBody: request.body, receivedAt: request.receivedAt)
        var events: [NormalizedEvent]
        switch type.lowercased() {
        case "test": events = [normalizer.testEvent()]
        case "purchases.updated": events = try normalizer.purchaseEvents()
        default: events = [normalizer.otherEvent(type: type)]
        }
        if apps.first(where: { $0.name == app })?.environment == .sandbox {
            // A sandbox app's purchases are sandbox ones even where Iaptic's `sandbox` flag is absent.
            for index in events.indices { events[index].environment = .sandbox }
        }
        let rawKey = events.first?.subject ?? object["applicationUsername"]?.string ?? app
        return AcceptedDelivery(events: events, rawKey: rawKey, response: .json(#"{"ok":true}"#))
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
