import Config
import Testing
import Verifiers

@Suite("Configuration: checkouts")
struct CheckoutsConfigTests {
    @Test("defaults: no public base URL (checkouts refused), 30 minutes to pay, expired ones kept 30 days, Antom's global domain, its answers within 300 s")
    func defaults() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "")
        #expect(config.checkouts.publicBaseURL == nil)
        #expect(config.checkouts.expirySeconds == 1_800)
        #expect(config.checkouts.retentionDays == 30)
        #expect(config.checkouts.antomAnswerWindowSeconds == 300)
        #expect(config.checkouts.antomBaseURL == "https://open-sea-global.alipay.com")
        #expect(config.checkouts.antomRedirectURL == nil)
        #expect(config.checkouts.antomPaymentMethodType == "ALIPAY_CN")
        #expect(config.checkouts.antomTimeoutMs == 10_000)
    }

    @Test("a full section is read; a trailing slash is dropped")
    func fullSection() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            checkouts:
              publicBaseURL: https://pay.example.com/tollgate/
              expirySeconds: 600
              retentionDays: 90
              antomBaseURL: https://open-na-global.alipay.com
              antomRedirectURL: https://shop.example.com/paid
              antomPaymentMethodType: GCASH
              antomTimeoutMs: 5000
              antomAnswerWindowSeconds: 120
            """)
        #expect(config.checkouts.publicBaseURL == "https://pay.example.com/tollgate")
        #expect(config.checkouts.expirySeconds == 600)
        #expect(config.checkouts.antomBaseURL == "https://open-na-global.alipay.com")
        #expect(config.checkouts.antomRedirectURL == "https://shop.example.com/paid")
        #expect(config.checkouts.antomPaymentMethodType == "GCASH")
        #expect(config.checkouts.antomTimeoutMs == 5_000)
        #expect(config.checkouts.retentionDays == 90)
        #expect(config.checkouts.antomAnswerWindowSeconds == 120)
    }

    @Test("a URL that is not http(s) or carries a query, or a value out of range, stops start-up naming the key",
          arguments: [("publicBaseURL: ftp://pay.example.com", "checkouts.publicBaseURL"),
                      ("publicBaseURL: https://pay.example.com/?x=1", "checkouts.publicBaseURL"),
                      ("antomBaseURL: open-sea-global.alipay.com", "checkouts.antomBaseURL"),
                      ("expirySeconds: 10", "checkouts.expirySeconds"),
                      ("antomTimeoutMs: 100000", "checkouts.antomTimeoutMs"),
                      ("retentionDays: 0", "checkouts.retentionDays"),
                      ("retentionDays: 100000", "checkouts.retentionDays"),
                      ("antomAnswerWindowSeconds: 5", "checkouts.antomAnswerWindowSeconds"),
                      ("antomAnswerWindowSeconds: 86400", "checkouts.antomAnswerWindowSeconds"),
                      ("antomPaymentMethodType: \"\"", "checkouts.antomPaymentMethodType")])
    func refused(_ entry: String, _ key: String) {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: "checkouts: { \(entry) }")
            Issue.record("accepted: \(entry)")
        } catch {
            #expect(error.key == key, "\(error)")
        }
    }

    @Test("antomBaseURL is https, or http only to a loopback host; any other host in clear text stops start-up naming the key",
          arguments: ["http://open-sea-global.alipay.com", "http://10.0.0.7:8080", "http://127.0.0.1.attacker.example",
                      "http://127.0.0.1@attacker.example", "http://127.0.0.1:80@attacker.example", "http://localhost.attacker.example",
                      "http://[::1].attacker.example", "http://[::2]:8080", "http://127.0.0.256", "http://0x7f.0.0.1",
                      "http://127.0.0.1:http"])
    func antomBaseURLInClearTextRefused(_ url: String) {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: "checkouts: { antomBaseURL: \"\(url)\" }")
            Issue.record("accepted: \(url)")
        } catch {
            #expect(error.key == "checkouts.antomBaseURL", "\(error)")
        }
    }

    @Test("antomBaseURL over http to this machine is taken (tests, a local proxy)",
          arguments: ["http://127.0.0.1:8080", "http://127.10.20.30", "http://localhost:9/", "http://[::1]:8443", "http://LOCALHOST",
                      "https://open-de-global.alipay.com"])
    func antomBaseURLLoopbackAccepted(_ url: String) throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "checkouts: { antomBaseURL: \"\(url)\" }")
        #expect(config.checkouts.antomBaseURL == (url.hasSuffix("/") ? String(url.dropLast()) : url))
    }
}
