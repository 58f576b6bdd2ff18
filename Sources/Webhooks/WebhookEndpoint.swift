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
    let apps, environments, eventTypes: Set<String>
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
            // Refused rather than accepted and silent: nothing would reach the endpoint.
            guard endpoint.kind == .events else {
                throw ConfigError(key: key + ".kind", message: "forward endpoints are not delivered by this version (docs/outbound-webhooks.md)")
            }
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
                                   timeout: .milliseconds(endpoint.timeoutMs), configuredEnabled: endpoint.enabled,
                                   allowPrivateNetwork: endpoint.allowPrivateNetwork)
        }
    }

    /// Whether an events endpoint's filters take this recorded message (what a replay may send it).
    public func takes(_ message: WebhookMessage) -> Bool {
        takes(app: message.app, environment: message.environment, eventType: message.eventType)
    }

    /// Whether an events endpoint's filters take this applied event.
    func takes(_ applied: AppliedEvent) -> Bool {
        takes(app: applied.entitlement.app, environment: applied.entitlement.environment, eventType: applied.event.type.rawValue)
    }

    private func takes(app: String, environment: String, eventType: String) -> Bool {
        kind == .events && (apps.isEmpty || apps.contains(app)) && (environments.isEmpty || environments.contains(environment))
            && (eventTypes.isEmpty || eventTypes.contains(eventType))
    }
}
