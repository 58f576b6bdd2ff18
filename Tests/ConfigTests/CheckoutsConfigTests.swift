import Config
import Senders
import Testing

@Suite("Configuration: checkouts")
struct CheckoutsConfigTests {
    @Test("defaults: no public base URL (checkouts refused), 30 minutes to pay, Antom's global domain")
    func defaults() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: "")
        #expect(config.checkouts.publicBaseUrl == nil)
        #expect(config.checkouts.expirySeconds == 1_800)
        #expect(config.checkouts.antomBaseUrl == "https://open-sea-global.alipay.com")
        #expect(config.checkouts.antomRedirectUrl == nil)
        #expect(config.checkouts.antomPaymentMethodType == "ALIPAY_CN")
        #expect(config.checkouts.antomTimeoutMs == 10_000)
    }

    @Test("a full section is read; a trailing slash is dropped")
    func fullSection() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            checkouts:
              publicBaseUrl: https://pay.example.com/tollgate/
              expirySeconds: 600
              antomBaseUrl: https://open-na-global.alipay.com
              antomRedirectUrl: https://shop.example.com/paid
              antomPaymentMethodType: GCASH
              antomTimeoutMs: 5000
            """)
        #expect(config.checkouts.publicBaseUrl == "https://pay.example.com/tollgate")
        #expect(config.checkouts.expirySeconds == 600)
        #expect(config.checkouts.antomBaseUrl == "https://open-na-global.alipay.com")
        #expect(config.checkouts.antomRedirectUrl == "https://shop.example.com/paid")
        #expect(config.checkouts.antomPaymentMethodType == "GCASH")
        #expect(config.checkouts.antomTimeoutMs == 5_000)
    }

    @Test("a URL that is not http(s) or carries a query, or a value out of range, stops start-up naming the key",
          arguments: [("publicBaseUrl: ftp://pay.example.com", "checkouts.publicBaseUrl"),
                      ("publicBaseUrl: https://pay.example.com/?x=1", "checkouts.publicBaseUrl"),
                      ("antomBaseUrl: open-sea-global.alipay.com", "checkouts.antomBaseUrl"),
                      ("expirySeconds: 10", "checkouts.expirySeconds"),
                      ("antomTimeoutMs: 100000", "checkouts.antomTimeoutMs"),
                      ("antomPaymentMethodType: \"\"", "checkouts.antomPaymentMethodType")])
    func refused(_ entry: String, _ key: String) {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: "checkouts: { \(entry) }")
            Issue.record("accepted: \(entry)")
        } catch {
            #expect(error.key == key, "\(error)")
        }
    }
}
