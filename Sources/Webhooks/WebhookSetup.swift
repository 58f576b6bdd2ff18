import Config
import Outbound
/// The outbound webhooks the workers deliver: the endpoints parsed from `webhooks` (a bad secret stops
/// the start, naming its key), and how their names are looked up (tests answer for names of their own).
public struct WebhookSetup: Sendable {
    public let settings: WebhookSettings
    public let endpoints: [WebhookEndpoint]
    public var resolver: @Sendable (String, Int) async -> [String] = HostResolver.addresses

    public init(settings: WebhookSettings) throws(ConfigError) {
        self.settings = settings
        endpoints = try WebhookEndpoint.all(settings)
    }
}
