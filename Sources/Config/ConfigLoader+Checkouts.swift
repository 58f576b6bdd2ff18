/// The `checkouts` section (docs/configuration.md, docs/checkouts.md).
extension ConfigLoader {
    static func readCheckouts(_ s: ConfigReader) throws(ConfigError) -> CheckoutSettings {
        var c = CheckoutSettings()
        c.publicBaseUrl = try baseURL(s, "publicBaseUrl")
        c.expirySeconds = try s.int("expirySeconds", default: c.expirySeconds, range: 60...604_800)
        c.antomBaseUrl = try baseURL(s, "antomBaseUrl", default: c.antomBaseUrl) ?? c.antomBaseUrl
        c.antomRedirectUrl = try baseURL(s, "antomRedirectUrl")
        c.antomPaymentMethodType = try s.string("antomPaymentMethodType", default: c.antomPaymentMethodType)
        if c.antomPaymentMethodType.isEmpty || c.antomPaymentMethodType.utf8.count > 64 {
            throw ConfigError(key: s.name("antomPaymentMethodType"), message: "expected 1 to 64 characters")
        }
        c.antomTimeoutMs = try s.int("antomTimeoutMs", default: c.antomTimeoutMs, range: 500...60_000)
        return c
    }

    /// An http(s) URL without a trailing slash, query or fragment (paths are appended to it).
    private static func baseURL(_ s: ConfigReader, _ key: String, default value: String? = nil) throws(ConfigError) -> String? {
        let text: String?
        if let value { text = try s.string(key, default: value) } else { text = try s.string(key) }
        guard let text, !text.isEmpty else { return nil }
        let trimmed = text.hasSuffix("/") ? String(text.dropLast()) : text
        guard trimmed.hasPrefix("https://") || trimmed.hasPrefix("http://"), trimmed.utf8.count > 8,
              !trimmed.contains("?"), !trimmed.contains("#"), !trimmed.contains(where: \.isWhitespace) else {
            throw ConfigError(key: s.name(key), message: "expected an http(s) URL without query or fragment, got \"\(text)\"")
        }
        return trimmed
    }
}
