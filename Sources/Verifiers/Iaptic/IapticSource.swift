import Config
import Events
import Rejections
import Toolkit

/// Iaptic (Fovea) purchase webhooks: `{"type": "purchases.updated" | "test", "password", ...}`.
/// Authenticity is the shared `password`, checked in constant time against every configured secret.
/// The password is the app's secret, so the raw topic and the spool keep the body without it
/// (`keptBody`) and the app it matched (`authenticatedScope`), which `reverify` reads back.
public struct IapticSource: WebhookSource {
    public let name = SourceName.iaptic
    public let mediaTypes: [MediaType] = [.json]
    private let apps: [IapticSettings.App]

    public init(settings: IapticSettings) {
        apps = settings.apps
    }

    public func accept(_ request: WebhookRequest) throws(Rejection) -> AcceptedDelivery {
        let object = try Self.object(request.body)
        return try deliver(object, app: try authenticate(object["password"]), receivedAt: request.receivedAt)
    }

    /// A delivery read back from the raw topic has no password: it was checked when the delivery
    /// arrived, and the record names the app it matched. A body that still has one (written before
    /// the password was removed) is checked as on arrival.
    public func reverify(_ request: WebhookRequest) async throws(Rejection) -> AcceptedDelivery {
        let object = try Self.object(request.body)
        if object["password"] != nil { return try accept(request) }
        guard let app = request.authenticatedScope, apps.contains(where: { $0.name == app }) else {
            throw Rejection(.missingPassword, "password is missing, and the record names no configured Iaptic app that it matched on arrival")
        }
        return try deliver(object, app: app, receivedAt: request.receivedAt)
    }

    private static func object(_ bytes: [UInt8]) throws(Rejection) -> [String: JSONValue] {
        guard let object = JSONValue.parse(bytes)?.object else {
            throw Rejection(.malformedJSON, "the body is not a JSON object")
        }
        return object
    }

    /// The body without `password`, as canonical JSON (keys sorted, no spaces): what the raw topic and
    /// the spool keep, and what the ids that hash the body hash, so replay computes the same ids.
    static func redacted(_ object: [String: JSONValue]) -> [UInt8] {
        var kept = object
        kept.removeValue(forKey: "password")
        return Array(JSONValue.object(kept).canonical.utf8)
    }

    private func deliver(_ object: [String: JSONValue], app: String, receivedAt: Timestamp) throws(Rejection) -> AcceptedDelivery {
        guard let type = object["type"]?.string else {
            throw Rejection(.missingField, "type is missing or not a string")
        }
        try Self.checkTypes(object)
        let kept = Self.redacted(object)
        let normalizer = IapticNormalizer(app: app, body: .object(object), rawBody: kept, receivedAt: receivedAt)
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
        // A callback is the user's purchases as a whole: keyed by the user, so one user's callbacks keep their
        // order on the raw topic (and at forward webhook endpoints) whichever of their purchases comes first.
        let rawKey = object["applicationUsername"]?.string.map { "\(app)/\($0)" } ?? events.first?.subject ?? app
        var delivery = AcceptedDelivery(events: events, rawKey: rawKey, response: .json(#"{"ok":true}"#))
        delivery.keptBody = kept
        delivery.authenticatedScope = app
        return delivery
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
