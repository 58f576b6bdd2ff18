import Config
import Testing
import Verifiers

/// The configuration error `yaml` gives, if any.
private func error(_ yaml: String) -> ConfigError? {
    do {
        _ = try SenderCatalog.standard.parseConfig(yaml: yaml)
        return nil
    } catch {
        return error
    }
}

@Suite("Configuration: App Store Server API")
struct AppleServerAPIConfigTests {
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
                serverApiEndpoints: { sandboxURL: "http://127.0.0.1:9999/sandbox", timeoutMs: 2500 }
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
        ("sources: { apple: { serverApiEndpoints: { productionURL: ftp://x } } }", "sources.apple.serverApiEndpoints.productionURL"),
        // The JWT would cross the network in clear text; http:// is for this machine only.
        ("sources: { apple: { serverApiEndpoints: { sandboxURL: 'http://api.example.com' } } }", "sources.apple.serverApiEndpoints.sandboxURL"),
        ("sources: { apple: { serverApiEndpoints: { productionURL: 'http://127.0.0.1.example.com' } } }", "sources.apple.serverApiEndpoints.productionURL"),
        ("sources: { google: { playApi: { tokenURL: 'http://oauth2.googleapis.com/token' } } }", "sources.google.playApi.tokenURL"),
        ("sources: { apple: { serverApiEndpoints: { timeoutMs: 50 } } }", "sources.apple.serverApiEndpoints.timeoutMs"),
        ("sources: { apple: { serverApiEndpoints: { bogus: 1 } } }", "sources.apple.serverApiEndpoints.bogus"),
    ])
    func refused(yaml: String, key: String) {
        #expect(error(yaml)?.key == key)
    }
}

@Suite("Configuration: answers to Apple's consumption requests")
struct AppleConsumptionConfigTests {
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

@Suite("Configuration: Google refund reviews and the at-risk refresh")
struct GoogleRefundReviewConfigTests {
    static let google = "sources: { google: { audience: a, serviceAccountEmail: s@example.com, packages: [com.example.app], playApi: { credentialsFile: /etc/key.json }"

    @Test("each package's policy is read; none by default; the refresh's rates are read within Play's and Apple's quotas")
    func read() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: """
            \(Self.google), refundReviews: [{ package: com.example.app, refundPreference: DECLINE, sampleContentProvided: true }] } }
            workers: { refreshIntervalSeconds: 30, refreshSpacingSeconds: 600, refreshPlayQueriesPerMinute: 500, refreshAppleRequestsPerSecond: 5 }
            """)
        #expect(config.sources.google.refundReviews == [.init(package: "com.example.app", refundPreference: .decline, sampleContentProvided: true)])
        #expect(config.workers.refreshIntervalSeconds == 30 && config.workers.refreshSpacingSeconds == 600)
        #expect(config.workers.refreshPlayQueriesPerMinute == 500 && config.workers.refreshAppleRequestsPerSecond == 5)
        let defaults = try SenderCatalog.standard.parseConfig(yaml: "\(Self.google) } }")
        #expect(defaults.sources.google.refundReviews.isEmpty && defaults.workers.refreshIntervalSeconds == 60)
    }

    @Test("a policy for an unlisted package, an unknown preference, a package twice, no Play credentials or a rate past the store's quota is refused, naming the key", arguments: [
        ("\(google), refundReviews: [{ package: com.other, refundPreference: DECLINE }] } }", "sources.google.refundReviews[0].package"),
        ("\(google), refundReviews: [{ package: com.example.app, refundPreference: GRANT_FULL }] } }", "sources.google.refundReviews[0].refundPreference"),
        ("\(google), refundReviews: [{ package: com.example.app, refundPreference: DECLINE }, { package: com.example.app, refundPreference: APPROVE }] } }",
         "sources.google.refundReviews"),
        ("sources: { google: { audience: a, serviceAccountEmail: s@example.com, packages: [com.example.app], refundReviews: [{ package: com.example.app, refundPreference: NEUTRAL }] } }",
         "sources.google.refundReviews"),
        ("workers: { refreshPlayQueriesPerMinute: 3001 }", "workers.refreshPlayQueriesPerMinute"),
        ("workers: { refreshAppleRequestsPerSecond: 51 }", "workers.refreshAppleRequestsPerSecond"),
    ])
    func refused(yaml: String, key: String) {
        #expect(error(yaml)?.key == key, "\(yaml)")
    }
}
