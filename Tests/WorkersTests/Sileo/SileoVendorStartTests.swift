import Config
import Events
import Foundation
import Merchant
import Outbound
import Testing
import Toolkit

/// Start-up refuses a Sileo vendor whose checkouts cannot work: its `app` must be an account of its
/// provider that can take a checkout, in the vendor's environment (else the customer pays and the
/// package, read in the other environment, never arrives), and checkouts need their public URL.
@Suite("Sileo: vendors that cannot sell are refused at start")
struct SileoVendorStartTests {
    static let sandboxClient = "SANDBOX_5YBZ1N2Z8Q6L09876"

    /// A vendor of `app` in `environment`, its sign-in key a real P-256 key.
    static func vendor(app: String, environment: NormalizedEvent.Environment, folder: URL) throws -> SileoSettings.Vendor {
        let key = try #require(PrivateKey.generateP256())
        let keyPath = folder.appendingPathComponent("signin.pem").path
        try Data(try #require(key.publicKeyPEM).utf8).write(to: URL(fileURLWithPath: keyPath))
        return SileoSettings.Vendor(
            basePath: "/sileo/shop", name: "Shop", icon: "https://repo.example/icon.png", description: "Shop Pay", authenticationBanner: nil,
            publicBaseURL: "https://pay.example.com", app: app, environment: environment, provider: "alipayplus",
            signIn: SileoSettings.SignIn(url: "https://account.example.com/sileo", assertionKeyFile: keyPath), packages: [])
    }

    static func refusal(_ vendor: SileoSettings.Vendor, _ config: TollgateConfig) -> String? {
        do {
            _ = try SileoVendor.load(vendor, checkouts: try CheckoutSetup.make(config: config, fetcher: HTTPClientFetcher()))
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("an Antom sandbox client sells in a sandbox vendor; the default (production) environment, an app that is no client, a client without a merchant key, or no checkouts.publicBaseURL are refused, naming the key and the fix")
    func refusals() async throws {
        let fixture = try await CheckoutFixture.make(antomBaseURL: "https://open-sea-global.alipay.com")
        defer { try? FileManager.default.removeItem(at: fixture.folder) }
        var config = fixture.config
        var sandbox = try #require(config.sources.alipayplus.clients.first)
        sandbox.clientId = Self.sandboxClient
        config.sources.alipayplus.clients.append(sandbox)

        #expect(Self.refusal(try Self.vendor(app: Self.sandboxClient, environment: .sandbox, folder: fixture.folder), config) == nil)
        #expect(Self.refusal(try Self.vendor(app: CheckoutFixture.clientId, environment: .production, folder: fixture.folder), config) == nil)

        let mismatch = try #require(Self.refusal(try Self.vendor(app: Self.sandboxClient, environment: .production, folder: fixture.folder), config))
        #expect(mismatch.contains("environment is production") && mismatch.contains("Set sileo.vendors[].environment: sandbox"), "\(mismatch)")

        let notAClient = try #require(Self.refusal(try Self.vendor(app: "com.example.repo", environment: .production, folder: fixture.folder), config))
        #expect(notAClient.contains("no Alipay+ client com.example.repo") && notAClient.contains("Set sileo.vendors[].app"), "\(notAClient)")

        var unsigned = config
        unsigned.sources.alipayplus.clients[1].merchantPrivateKey = nil
        let noKey = try #require(Self.refusal(try Self.vendor(app: Self.sandboxClient, environment: .sandbox, folder: fixture.folder), unsigned))
        #expect(noKey.contains("merchantPrivateKey"), "\(noKey)")

        var unreachable = config
        unreachable.checkouts.publicBaseURL = nil
        let noURL = try #require(Self.refusal(try Self.vendor(app: Self.sandboxClient, environment: .sandbox, folder: fixture.folder), unreachable))
        #expect(noURL.contains("checkouts.publicBaseURL"), "\(noURL)")
    }
}
