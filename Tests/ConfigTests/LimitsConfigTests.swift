import Config
import Events
import Testing
import Verifiers

@Suite("Configuration: limits and HTTP deadlines")
struct LimitsConfigTests {
    @Test("defaults: bounded in-flight requests, no rates, head and body deadlines, head limits")
    func defaults() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "")
        #expect(config.limits.maxInFlight == 1_024)
        #expect(config.limits.maxInFlightPerSource == 512)
        #expect(config.limits.maxConnections == 4_096)
        #expect(config.limits.rates.isEmpty)
        #expect(config.http.headerTimeoutMs == 10_000)
        #expect(config.http.bodyTimeoutMs == 15_000)
        #expect(config.http.maxHeaderBytes == 32_768)
        #expect(config.http.maxHeaderCount == 100)
    }

    @Test("a full limits section is read; burst defaults to one second's worth")
    func fullSection() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            http: { headerTimeoutMs: 2000, bodyTimeoutMs: 4000, maxHeaderBytes: 16384, maxHeaderCount: 50 }
            limits:
              maxInFlight: 300
              maxInFlightPerSource: 100
              maxConnections: 2000
              rates:
                apple: { perSecond: 200, burst: 400 }
                google: { perSecond: 2.5 }
            """)
        #expect(config.limits.maxInFlight == 300)
        #expect(config.limits.maxInFlightPerSource == 100)
        #expect(config.limits.maxConnections == 2_000)
        #expect(config.limits.rates == [.apple: LimitSettings.Rate(perSecond: 200, burst: 400),
                                        .google: LimitSettings.Rate(perSecond: 2.5, burst: 3)])
        #expect(config.http.headerTimeoutMs == 2_000)
        #expect(config.http.bodyTimeoutMs == 4_000)
        #expect(config.http.maxHeaderBytes == 16_384)
        #expect(config.http.maxHeaderCount == 50)
    }

    @Test("unset, the per-sender bound and the head deadline follow a smaller total and idle timeout")
    func derivedDefaults() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "http: { idleTimeoutMs: 4000 }\nlimits: { maxInFlight: 64 }")
        #expect(config.limits.maxInFlightPerSource == 64)
        #expect(config.http.headerTimeoutMs == 4_000)
    }

    @Test("every key, a sender's rate included, has its TOLLGATE_* variable")
    func environment() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "limits: { rates: { apple: { perSecond: 10 } } }", environment: [
            "TOLLGATE_LIMITS_MAX_IN_FLIGHT": "200",
            "TOLLGATE_LIMITS_MAX_IN_FLIGHT_PER_SOURCE": "50",
            "TOLLGATE_LIMITS_MAX_CONNECTIONS": "500",
            "TOLLGATE_LIMITS_RATES_APPLE_BURST": "30",
            "TOLLGATE_LIMITS_RATES_IAPTIC_PER_SECOND": "5",
            "TOLLGATE_HTTP_HEADER_TIMEOUT_MS": "3000",
            "TOLLGATE_HTTP_BODY_TIMEOUT_MS": "6000",
            "TOLLGATE_HTTP_MAX_HEADER_BYTES": "8192",
            "TOLLGATE_HTTP_MAX_HEADER_COUNT": "40",
        ])
        #expect(config.limits.maxInFlight == 200)
        #expect(config.limits.maxInFlightPerSource == 50)
        #expect(config.limits.maxConnections == 500)
        #expect(config.limits.rates == [.apple: LimitSettings.Rate(perSecond: 10, burst: 30),
                                        .iaptic: LimitSettings.Rate(perSecond: 5, burst: 5)])
        #expect(config.http.headerTimeoutMs == 3_000)
        #expect(config.http.bodyTimeoutMs == 6_000)
        #expect(config.http.maxHeaderBytes == 8_192)
        #expect(config.http.maxHeaderCount == 40)
    }

    @Test("a bad value fails and is named", arguments: [
        ("limits: { maxInFlight: 0 }", "limits.maxInFlight"),
        ("limits: { maxInFlight: many }", "limits.maxInFlight"),
        ("limits: { maxInFlight: 10, maxInFlightPerSource: 11 }", "limits.maxInFlightPerSource"),
        ("limits: { maxInFlightPerSource: 0 }", "limits.maxInFlightPerSource"),
        ("limits: { maxConnections: 0 }", "limits.maxConnections"),
        ("limits: { rates: { apple: { perSecond: 0 } } }", "limits.rates.apple.perSecond"),
        ("limits: { rates: { apple: { perSecond: fast } } }", "limits.rates.apple.perSecond"),
        ("limits: { rates: { apple: { perSecond: .nan } } }", "limits.rates.apple.perSecond"),
        ("limits: { rates: { apple: { burst: 5 } } }", "limits.rates.apple.perSecond"),
        ("limits: { rates: { apple: { perSecond: 5, burst: 0 } } }", "limits.rates.apple.burst"),
        ("http: { headerTimeoutMs: 50 }", "http.headerTimeoutMs"),
        ("http: { idleTimeoutMs: 5000, headerTimeoutMs: 6000 }", "http.headerTimeoutMs"),
        ("http: { bodyTimeoutMs: 0 }", "http.bodyTimeoutMs"),
        ("http: { maxHeaderBytes: 100 }", "http.maxHeaderBytes"),
        ("http: { maxHeaderCount: 100000 }", "http.maxHeaderCount"),
    ])
    func badValue(yaml: String, key: String) {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
            Issue.record("\(yaml) was accepted")
        } catch {
            #expect(error.key == key)
        }
    }

    @Test("a rate for a sender that does not exist, or an unknown key in a rate, fails and is named", arguments: [
        ("limits: { rates: { paypal: { perSecond: 1 } } }", "limits.rates.paypal"),
        ("limits: { rates: { apple: { perSecond: 1, perMinute: 5 } } }", "limits.rates.apple.perMinute"),
        ("limits: { maxInflight: 1 }", "limits.maxInflight"),
    ])
    func unknownKey(yaml: String, key: String) {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
            Issue.record("\(yaml) was accepted")
        } catch {
            #expect(error.key == key)
            #expect(error.message.contains("unknown key"))
        }
    }

    @Test("a misspelt variable for a sender's rate is refused, not ignored")
    func unknownVariable() {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: "", environment: ["TOLLGATE_LIMITS_RATES_PAYPAL_PER_SECOND": "5"])
            Issue.record("accepted")
        } catch {
            #expect(error.key == "TOLLGATE_LIMITS_RATES_PAYPAL_PER_SECOND")
        }
    }
}

@Suite("Configuration: sender silence")
struct SilenceConfigTests {
    @Test("silence.<sender> in seconds, for the catalog's senders only, within a minute and a year")
    func silence() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "silence: { google: 21600, apple: 86400 }")
        #expect(config.silence.afterSeconds == [.google: 21_600, .apple: 86_400])
        #expect(try SenderCatalog.standard.parseConfig(yaml: "", environment: ["TOLLGATE_SILENCE_IAPTIC": "3600"]).silence.afterSeconds == [.iaptic: 3_600])
        for (yaml, key) in [("silence: { google: 10 }", "silence.google"), ("silence: { nobody: 3600 }", "silence.nobody")] {
            do {
                _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
                Issue.record("\(yaml) was accepted")
            } catch {
                #expect(error.key == key)
            }
        }
    }
}
