import Config
import Foundation
import Testing
import Verifiers

/// Relative paths in a configuration file resolve against the file's directory, so a configuration runs
/// from any working directory; one from an environment variable, or a default, against the working
/// directory. A key in another casing than the one read is refused by its name.
@Suite("Configuration: paths and key spelling")
struct ConfigPathTests {
    static let yaml = """
        api: { tokens: [server-token-0123456789abcdef], userTokenKeys: { shop: keys/user-token.pub.pem } }
        catalog:
          apps:
            - { name: Shop, ids: [SANDBOX_5YBZ1N2Z8Q6L09876], products: [{ id: tweak.lifetime, prices: { USD: 199 } }] }
        store: { url: "sqlite:./data/tollgate.sqlite" }
        spool: { path: data/spool.sqlite }
        purchases: { receiptRootCertificates: [apple/AppleIncRootCertificate.cer, /etc/ssl/apple-root.cer] }
        checkouts: { publicBaseURL: "https://pay.example.com" }
        sources:
          apple:
            roots: [apple/AppleRootCA-G3.cer]
            apps: [{ bundleId: com.example.app, appAppleId: 1234567890, serverApi: { issuerId: i, keyId: k, privateKeyFile: ./apple/SubscriptionKey.p8 } }]
          google:
            audience: "https://pay.example.com/webhooks/google"
            serviceAccountEmail: push@example.iam.gserviceaccount.com
            packages: [com.example.app]
            jwks: google/jwks.json
            playApi: { credentialsFile: google/service-account.json }
          alipayplus:
            clients:
              - { clientId: SANDBOX_5YBZ1N2Z8Q6L09876, platformPublicKeys: [keys/antom-public.pem, { path: keys/antom-next.pem, keyVersion: 2 }],
                  merchantPrivateKey: keys/merchant-private.pem }
        sileo:
          vendors:
            - basePath: /sileo/shop
              name: Shop
              icon: https://repo.example/icon.png
              description: Shop Pay
              publicBaseURL: https://pay.example.com
              app: SANDBOX_5YBZ1N2Z8Q6L09876
              environment: sandbox
              provider: alipayplus
              signIn: { url: "https://account.example.com/sileo", assertionKeyFile: keys/signin.pub.pem }
              downloadDirectory: debs
              downloadURLSecretFile: /etc/tollgate/download.secret
              packages: [{ id: com.example.tweak, product: tweak.lifetime, currency: USD, price: "$1.99", file: tweak_1.0.deb }]
        """

    /// Writes `text` as `<temporary>/conf/tollgate.yaml` and loads it with `environment`.
    static func load(_ text: String, environment: [String: String] = [:]) throws -> (TollgateConfig, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-paths-\(UUID().uuidString)/conf")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("tollgate.yaml")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        return (try SenderCatalog.standard.loadConfig(path: file.path, environment: environment), directory.path)
    }

    @Test("every relative path in the file resolves against the file's directory; absolute ones stay as written")
    func relativeToTheFile() throws {
        let (config, dir) = try Self.load(Self.yaml)
        #expect(config.api.userTokenKeys["shop"] == "\(dir)/keys/user-token.pub.pem")
        #expect(config.store.url == "sqlite:\(dir)/data/tollgate.sqlite")
        #expect(config.spool.path == "\(dir)/data/spool.sqlite")
        #expect(config.purchases.receiptRootCertificates == ["\(dir)/apple/AppleIncRootCertificate.cer", "/etc/ssl/apple-root.cer"])
        #expect(config.sources.apple.roots == ["\(dir)/apple/AppleRootCA-G3.cer"])
        #expect(config.sources.apple.apps.first?.serverAPI?.privateKeyFile == "\(dir)/apple/SubscriptionKey.p8")
        #expect(config.sources.google.jwks == "\(dir)/google/jwks.json")
        #expect(config.sources.google.playApi.credentialsFile == "\(dir)/google/service-account.json")
        let client = try #require(config.sources.alipayplus.clients.first)
        #expect(client.platformPublicKeys.map(\.path) == ["\(dir)/keys/antom-public.pem", "\(dir)/keys/antom-next.pem"])
        #expect(client.merchantPrivateKey == "\(dir)/keys/merchant-private.pem")
        let vendor = try #require(config.sileo.vendors.first)
        #expect(vendor.signIn.assertionKeyFile == "\(dir)/keys/signin.pub.pem")
        #expect(vendor.downloadDirectory == "\(dir)/debs")
        #expect(vendor.downloadURLSecretFile == "/etc/tollgate/download.secret")
        // A URL is not a path.
        #expect(config.checkouts.publicBaseURL == "https://pay.example.com")
    }

    @Test("a path from an environment variable, and a default, stay relative to the working directory")
    func environmentAndDefaults() throws {
        let (config, dir) = try Self.load(Self.yaml, environment: ["TOLLGATE_SPOOL_PATH": "run/spool.sqlite",
                                                                   "TOLLGATE_SOURCES_ALIPAYPLUS_CLIENTS": "[{ clientId: C1, platformPublicKeys: [k.pem] }]"])
        #expect(config.spool.path == "run/spool.sqlite")
        #expect(config.sources.alipayplus.clients.first?.platformPublicKeys.map(\.path) == ["k.pem"])
        #expect(config.store.url == "sqlite:\(dir)/data/tollgate.sqlite")
        // The store's URL from the environment wins over the file's, and is not a path of the file's.
        let (fromEnvironment, _) = try Self.load(Self.yaml, environment: ["TOLLGATE_STORE_URL": "postgres://tollgate@db.internal:5432/tollgate"])
        #expect(fromEnvironment.store.url == "postgres://tollgate@db.internal:5432/tollgate")
        let (relativeSQLite, _) = try Self.load(Self.yaml, environment: ["TOLLGATE_STORE_URL": "sqlite:run/tollgate.sqlite"])
        #expect(relativeSQLite.store.url == "sqlite:run/tollgate.sqlite")
        let (memory, _) = try Self.load(Self.yaml.replacingOccurrences(of: "sqlite:./data/tollgate.sqlite", with: "sqlite::memory:"))
        #expect(memory.store.url == "sqlite::memory:")
        let (defaults, _) = try Self.load("log: { level: info }")
        #expect(defaults.store.url == StoreSettings().url && defaults.spool.path == SpoolSettings().path)
    }

    @Test("a key in another casing than the one read is refused by its name, before the key it misspells is missed")
    func otherCasing() throws {
        for (from, to, key) in [("publicBaseURL: https://pay.example.com\n      app:", "publicBaseUrl: https://pay.example.com\n      app:",
                                 "sileo.vendors[0].publicBaseUrl"),
                                ("checkouts: { publicBaseURL:", "checkouts: { publicBaseUrl:", "checkouts.publicBaseUrl"),
                                ("downloadDirectory: debs", "downloaddirectory: debs", "sileo.vendors[0].downloaddirectory")] {
            let text = Self.yaml.replacingOccurrences(of: from, with: to)
            #expect(text != Self.yaml)
            #expect(throws: ConfigError.self) { try Self.load(text) }
            do {
                _ = try Self.load(text)
            } catch let error as ConfigError {
                #expect(error.key == key, "\(error)")
                #expect(error.message.hasPrefix("unknown key"), "\(error)")
            }
        }
    }
}
