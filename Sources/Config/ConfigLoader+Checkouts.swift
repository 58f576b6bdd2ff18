/// The `checkouts` section (docs/configuration.md, docs/checkouts.md).
extension ConfigLoader {
    static func readCheckouts(_ s: ConfigReader) throws(ConfigError) -> CheckoutSettings {
        var c = CheckoutSettings()
        c.publicBaseURL = try baseURL(s, "publicBaseURL")
        c.expirySeconds = try s.int("expirySeconds", default: c.expirySeconds, range: 60...604_800)
        c.retentionDays = try s.int("retentionDays", default: c.retentionDays, range: 1...3_650)
        c.antomBaseURL = try baseURL(s, "antomBaseURL", default: c.antomBaseURL) ?? c.antomBaseURL
        // The merchant's signed calls and Antom's payment pages travel here: never in clear text off this machine.
        guard c.antomBaseURL.lowercased().hasPrefix("https://") || ConfigReader.isLoopbackHTTP(c.antomBaseURL) else {
            throw ConfigError(key: s.name("antomBaseURL"),
                              message: "expected an https:// URL (http:// only to this machine: 127.0.0.0/8, [::1] or localhost), got \"\(c.antomBaseURL)\"")
        }
        c.antomRedirectURL = try baseURL(s, "antomRedirectURL")
        c.antomPaymentMethodType = try s.string("antomPaymentMethodType", default: c.antomPaymentMethodType)
        if c.antomPaymentMethodType.isEmpty || c.antomPaymentMethodType.utf8.count > 64 {
            throw ConfigError(key: s.name("antomPaymentMethodType"), message: "expected 1 to 64 characters")
        }
        c.antomTimeoutMs = try s.int("antomTimeoutMs", default: c.antomTimeoutMs, range: 500...60_000)
        c.antomAnswerWindowSeconds = try s.int("antomAnswerWindowSeconds", default: c.antomAnswerWindowSeconds, range: 30...3_600)
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
