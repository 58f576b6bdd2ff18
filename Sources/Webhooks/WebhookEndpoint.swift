import Config
import Entitlements
import Events

/// One configured endpoint, its secrets and keys parsed: what the projection's recorder filters by and
/// what the dispatcher delivers to.
public struct WebhookEndpoint: Sendable {
    public let name: String
    /// Never logged or shown whole: a merchant's URL may carry a token.
    let target: EndpointURL
    public let kind: WebhookSettings.Endpoint.Kind
    let secrets: [WebhookSecret]
    let keys: [WebhookSigningKey]
    let apps, environments, eventTypes, senders: Set<String>
    let timeout: Duration
    /// As configured: the store's state (`tollgate webhooks disable`, or disabled for failing) may also stop it.
    public let configuredEnabled: Bool
    let allowPrivateNetwork: Bool

    /// What receivers verify `v1a` signatures with (`whpk_...`), one per signing key.
    public var publicKeys: [String] { keys.map(\.publicKey) }

    /// The host and port, for an operator: not the path or query.
    public var origin: String { "https://\(target.host.contains(":") ? "[\(target.host)]" : target.host):\(target.port)" }

    /// Every endpoint of `settings`, or the first secret or key that does not parse, by its key's name.
    public static func all(_ settings: WebhookSettings) throws(ConfigError) -> [WebhookEndpoint] {
        try settings.endpoints.enumerated().map { (index, endpoint) throws(ConfigError) in
            let key = "webhooks.endpoints[\(index)]"
            guard let target = EndpointURL(endpoint.url) else { throw ConfigError(key: key + ".url", message: "not an https URL") }
            var secrets: [WebhookSecret] = []
            for (n, text) in endpoint.secrets.enumerated() {
                do throws(WebhookKeyError) { secrets.append(try WebhookSecret(text)) } catch { throw ConfigError(key: "\(key).secrets[\(n)]", message: error.description) }
            }
            var keys: [WebhookSigningKey] = []
            for (n, text) in endpoint.signingKeys.enumerated() {
                do throws(WebhookKeyError) { keys.append(try WebhookSigningKey(text)) } catch { throw ConfigError(key: "\(key).signingKeys[\(n)]", message: error.description) }
            }
            return WebhookEndpoint(name: endpoint.name, target: target, kind: endpoint.kind, secrets: secrets, keys: keys,
                                   apps: endpoint.apps, environments: endpoint.environments, eventTypes: endpoint.eventTypes,
                                   senders: endpoint.senders,
                                   timeout: .milliseconds(endpoint.timeoutMs), configuredEnabled: endpoint.enabled,
                                   allowPrivateNetwork: endpoint.allowPrivateNetwork)
        }
    }

    /// Whether the endpoint's filters take this recorded message (what a replay may send it): an events
    /// endpoint events, a forward endpoint forwarded requests.
    public func takes(_ message: WebhookMessage) -> Bool {
        message.kind == kind && takes(app: message.app, environment: message.environment, eventType: message.eventType, sender: message.source)
    }

    /// Whether an events endpoint's filters take this applied event.
    func takes(_ applied: AppliedEvent) -> Bool {
        kind == .events && takes(app: applied.entitlement.app, environment: applied.entitlement.environment,
                                 eventType: applied.event.type.rawValue, sender: applied.entitlement.source)
    }

    /// Whether a forward endpoint's filters take this verified delivery.
    func takes(_ delivery: ForwardedDelivery) -> Bool {
        kind == .forward && takes(app: delivery.app, environment: delivery.environment, eventType: delivery.eventType, sender: delivery.sender.rawValue)
    }

    /// Event types filter events endpoints, senders forward endpoints (the configuration allows no other).
    private func takes(app: String, environment: String, eventType: String, sender: String) -> Bool {
        (apps.isEmpty || apps.contains(app)) && (environments.isEmpty || environments.contains(environment))
            && (kind == .forward || eventTypes.isEmpty || eventTypes.contains(eventType))
            && (kind == .events || senders.isEmpty || senders.contains(sender))
    }
}
