import Events

/// The HTTP hardening's keys: deadlines and head limits, and the `limits` section.
extension ConfigLoader {
    static func readHTTPHardening(_ s: ConfigReader, into h: inout HTTPSettings) throws(ConfigError) {
        // Hummingbird's idle timer counts only complete request parts, so a trickled head is cut by it
        // anyway: a longer head deadline could never fire. Unset, it follows a shorter idle timeout.
        if let headerTimeout = try s.optionalInt("headerTimeoutMs") {
            guard (100...h.idleTimeoutMs).contains(headerTimeout) else {
                throw ConfigError(key: s.name("headerTimeoutMs"),
                                  message: "expected an integer in 100...\(h.idleTimeoutMs) (at most http.idleTimeoutMs), got \"\(headerTimeout)\"")
            }
            h.headerTimeoutMs = headerTimeout
        } else {
            h.headerTimeoutMs = min(h.headerTimeoutMs, h.idleTimeoutMs)
        }
        h.bodyTimeoutMs = try s.int("bodyTimeoutMs", default: h.bodyTimeoutMs, range: 100...3_600_000)
        h.maxHeaderBytes = try s.int("maxHeaderBytes", default: h.maxHeaderBytes, range: 1_024...1_048_576)
        h.maxHeaderCount = try s.int("maxHeaderCount", default: h.maxHeaderCount, range: 8...10_000)
    }

    static func readLimits(_ s: ConfigReader, senders: [SourceName]) throws(ConfigError) -> LimitSettings {
        var l = LimitSettings()
        l.maxInFlight = try s.int("maxInFlight", default: l.maxInFlight, range: 1...1_000_000)
        // Unset, the per-sender bound follows a smaller total, so lowering the total alone stays valid.
        if let perSource = try s.optionalInt("maxInFlightPerSource") {
            guard (1...l.maxInFlight).contains(perSource) else {
                throw ConfigError(key: s.name("maxInFlightPerSource"),
                                  message: "expected an integer in 1...\(l.maxInFlight) (at most limits.maxInFlight), got \"\(perSource)\"")
            }
            l.maxInFlightPerSource = perSource
        } else {
            l.maxInFlightPerSource = min(l.maxInFlightPerSource, l.maxInFlight)
        }
        l.maxConnections = try s.int("maxConnections", default: l.maxConnections, range: 1...1_000_000)
        l.rates = try s.section("rates") { (r) throws(ConfigError) in
            var rates: [SourceName: LimitSettings.Rate] = [:]
            for source in senders {
                let rate = try r.section(source.rawValue) { (one) throws(ConfigError) in try readRate(one) }
                if let rate { rates[source] = rate }
            }
            return rates
        }
        return l
    }

    /// `{perSecond, burst}`; burst defaults to one second's worth (at least one request).
    private static func readRate(_ r: ConfigReader) throws(ConfigError) -> LimitSettings.Rate? {
        let burst = try r.optionalInt("burst")
        guard let text = try r.string("perSecond") else {
            if burst != nil { throw ConfigError(key: r.name("perSecond"), message: "is required with burst") }
            return nil
        }
        guard let perSecond = Double(text), perSecond.isFinite, (0.001...1_000_000).contains(perSecond) else {
            throw ConfigError(key: r.name("perSecond"), message: "expected a number in 0.001...1000000, got \"\(text)\"")
        }
        let chosen = burst ?? max(1, Int(perSecond.rounded(.up)))
        guard (1...10_000_000).contains(chosen) else {
            throw ConfigError(key: r.name("burst"), message: "expected an integer in 1...10000000, got \"\(chosen)\"")
        }
        return LimitSettings.Rate(perSecond: perSecond, burst: chosen)
    }
}
