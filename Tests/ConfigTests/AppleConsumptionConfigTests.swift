import Config
import Senders
import Testing

@Suite("Configuration: answers to Apple's consumption requests")
struct AppleConsumptionConfigTests {
    func error(_ yaml: String) -> ConfigError? {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
            return nil
        } catch {
            return error
        }
    }

    @Test("off by default; an enabled policy is read with its consent, sample and refund preference")
    func read() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            sources:
              apple:
                apps:
                  - bundleId: com.example.app
                    appAppleId: 1234
                    serverApi: { issuerId: 57246542-96fe-1a63-e053-0824d011072a, keyId: 2X9R4HXF34, privateKeyFile: /keys/k.p8 }
                    consumption: { enabled: true, customerConsented: true, sampleContentProvided: true, refundPreference: GRANT_PRORATED }
                  - bundleId: com.example.other
                    appAppleId: 5678
            """)
        let apps = config.sources.apple.apps
        let policy = try #require(apps.first?.consumption)
        #expect(policy.enabled && policy.customerConsented && policy.sampleContentProvided)
        #expect(policy.refundPreference == .grantProrated)
        #expect(apps.last?.consumption == AppleSettings.App.ConsumptionPolicy())
        #expect(apps.last?.consumption.enabled == false)
    }

    @Test("an enabled policy without consent or without the app's key, or an unknown preference, is refused, naming the key", arguments: [
        ("sources: { apple: { apps: [{ bundleId: b, appAppleId: 1, serverApi: { issuerId: i, keyId: k, privateKeyFile: f }, consumption: { enabled: true } }] } }",
         "sources.apple.apps[0].consumption.customerConsented"),
        ("sources: { apple: { apps: [{ bundleId: b, appAppleId: 1, consumption: { enabled: true, customerConsented: true } }] } }",
         "sources.apple.apps[0].consumption.enabled"),
        ("sources: { apple: { apps: [{ bundleId: b, appAppleId: 1, consumption: { refundPreference: REFUND } }] } }",
         "sources.apple.apps[0].consumption.refundPreference"),
        ("sources: { apple: { apps: [{ bundleId: b, appAppleId: 1, consumption: { playTime: 3 } }] } }",
         "sources.apple.apps[0].consumption.playTime"),
    ])
    func refused(yaml: String, key: String) {
        #expect(error(yaml)?.key == key)
    }
}
