/// The `checkouts` section (docs/configuration.md, docs/checkouts.md).
extension ConfigLoader {
    static func readCheckouts(_ s: ConfigReader) throws(ConfigError) -> CheckoutSettings {
        var c = CheckoutSettings()
        c.publicBaseUrl = try baseURL(s, "publicBaseUrl")
        c.expirySeconds = try s.int("expirySeconds", default: c.expirySeconds, range: 60...604_800)
        c.retentionDays = try s.int("retentionDays", default: c.retentionDays, range: 1...3_650)
        c.antomBaseUrl = try baseURL(s, "antomBaseUrl", default: c.antomBaseUrl) ?? c.antomBaseUrl
        // The merchant's signed calls and Antom's payment pages travel here: never in clear text off this machine.
        guard c.antomBaseUrl.lowercased().hasPrefix("https://") || isLoopbackHTTP(c.antomBaseUrl) else {
            throw ConfigError(key: s.name("antomBaseUrl"),
                              message: "expected an https:// URL (http:// only to this machine: 127.0.0.0/8, [::1] or localhost), got \"\(c.antomBaseUrl)\"")
        }
        c.antomRedirectUrl = try baseURL(s, "antomRedirectUrl")
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

    /// Whether `url` is `http://` to this machine: its host (read after any `user@`, which would
    /// otherwise hide the real one) is in 127.0.0.0/8, `[::1]` or `localhost`, with at most a port.
    static func isLoopbackHTTP(_ url: String) -> Bool {
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") else { return false }
        let authority = lowered.dropFirst("http://".count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return false }
        func isPort(_ text: Substring) -> Bool {
            text.first == ":" && (2...6).contains(text.count) && text.dropFirst().allSatisfy { $0.isASCII && $0.isNumber }
        }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            let rest = authority[authority.index(after: close)...]
            return authority[authority.index(after: authority.startIndex)..<close] == "::1" && (rest.isEmpty || isPort(rest))
        }
        var host = authority
        if let colon = authority.firstIndex(of: ":") {
            guard isPort(authority[colon...]) else { return false }
            host = authority[..<colon]
        }
        if host == "localhost" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ octet in
            (1...3).contains(octet.count) && octet.allSatisfy { $0.isASCII && $0.isNumber } && (Int(octet).map { $0 <= 255 } ?? false)
        }) else { return false }
        return octets.first == "127"
    }
}
