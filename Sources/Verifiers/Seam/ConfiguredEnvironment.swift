import Config
import Events

extension ConfigReader {
    /// The `environment` of a configured account, client or app whose deliveries do not say it
    /// themselves (Citcon, Alipay+, Iaptic): `production` (the default) or `sandbox`. Its events carry
    /// it, so a sandbox account's purchases never decide a production entitlement.
    func environment() throws(ConfigError) -> NormalizedEvent.Environment {
        let text = try string("environment", default: NormalizedEvent.Environment.production.rawValue)
        guard let environment = NormalizedEvent.Environment(rawValue: text) else {
            throw ConfigError(key: name("environment"), message: "expected production or sandbox, got \"\(text)\"")
        }
        return environment
    }
}
