import Config
import Senders
import Testing

@Suite("Configuration: App Store Server API")
struct AppleServerAPIConfigTests {
    func error(_ yaml: String) -> ConfigError? {
        do {
            _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
            return nil
        } catch {
            return error
        }
    }

    @Test("each app's key and the API's URLs and timeout are read; Apple's URLs by default")
    func read() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            sources:
              apple:
                apps:
                  - bundleId: com.example.app
                    appAppleId: 1234
                    serverApi: { issuerId: 57246542-96fe-1a63-e053-0824d011072a, keyId: 2X9R4HXF34, privateKeyFile: /etc/tollgate/apple/SubscriptionKey_2X9R4HXF34.p8 }
                  - bundleId: com.example.other
                    appAppleId: 5678
                serverApi: { sandboxURL: "http://127.0.0.1:9999/sandbox", timeoutMs: 2500 }
            """)
        let apple = config.sources.apple
        let key = try #require(apple.apps.first?.serverAPI)
        #expect(key.issuerId == "57246542-96fe-1a63-e053-0824d011072a" && key.keyId == "2X9R4HXF34")
        #expect(key.privateKeyFile == "/etc/tollgate/apple/SubscriptionKey_2X9R4HXF34.p8")
        #expect(apple.apps.last?.serverAPI == nil)
        #expect(apple.serverAPI.productionURL == "https://api.storekit.apple.com")
        #expect(apple.serverAPI.sandboxURL == "http://127.0.0.1:9999/sandbox")
        #expect(apple.serverAPI.timeoutMs == 2_500)
    }

    @Test("a partial or empty key, a non-HTTP URL or a timeout out of range is refused, naming the key", arguments: [
        ("sources: { apple: { apps: [{ bundleId: b, appAppleId: 1, serverApi: { issuerId: i, keyId: k } }] } }", "sources.apple.apps[0].serverApi.issuerId"),
        ("sources: { apple: { apps: [{ bundleId: b, appAppleId: 1, serverApi: { issuerId: i, keyId: '', privateKeyFile: f } }] } }", "sources.apple.apps[0].serverApi.keyId"),
        ("sources: { apple: { serverApi: { productionURL: ftp://x } } }", "sources.apple.serverApi.productionURL"),
        // The JWT would cross the network in clear text; http:// is for this machine only.
        ("sources: { apple: { serverApi: { sandboxURL: 'http://api.example.com' } } }", "sources.apple.serverApi.sandboxURL"),
        ("sources: { apple: { serverApi: { productionURL: 'http://127.0.0.1.example.com' } } }", "sources.apple.serverApi.productionURL"),
        ("sources: { google: { playApi: { tokenURL: 'http://oauth2.googleapis.com/token' } } }", "sources.google.playApi.tokenURL"),
        ("sources: { apple: { serverApi: { timeoutMs: 50 } } }", "sources.apple.serverApi.timeoutMs"),
        ("sources: { apple: { serverApi: { bogus: 1 } } }", "sources.apple.serverApi.bogus"),
    ])
    func refused(yaml: String, key: String) {
        #expect(error(yaml)?.key == key)
    }
}
