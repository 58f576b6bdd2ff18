import Config
import Testing
import Verifiers

/// `sileo.vendors` (docs/configuration.md#sileo): read as written, and refused where a value could
/// send a credential in clear text, walk out of the download directory or take over another route.
@Suite("Configuration: sileo")
struct SileoConfigTests {
    static func yaml(basePath: String = "/sileo/chariz", publicBaseURL: String = "https://pay.example.com/",
                     package: String = "{id: org.example.tweak, product: tweak.lifetime, currency: USD, price: \"$1.99\", file: tweak.deb}",
                     secretFile: String? = nil) -> String {
        """
        catalog:
          apps:
            - { name: Chariz, ids: [com.example.repo], products: [{ id: tweak.lifetime, prices: { USD: 199 } }, { id: p, prices: { USD: 1 } }] }
        sileo:
          vendors:
            - basePath: \(basePath)
              name: Chariz
              icon: https://repo.example.com/icon.png
              description: Chariz Pay
              authenticationBanner: { message: Sign in, button: Sign in }
              publicBaseURL: \(publicBaseURL)
              app: com.example.repo
              provider: alipayplus
              signIn: { url: "https://account.example.com/sign-in", assertionKeyFile: /etc/signin.pem }
              downloadDirectory: /srv/debs\(secretFile.map { "\n      downloadURLSecretFile: \($0)" } ?? "")
              packages: [\(package)]
        """
    }

    @Test("a vendor is read with its defaults; the public URL loses its trailing slash")
    func read() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: Self.yaml())
        let vendor = try #require(config.sileo.vendors.first)
        #expect(vendor.basePath == "/sileo/chariz")
        #expect(vendor.publicBaseURL == "https://pay.example.com")
        #expect(vendor.downloadKeyTtlSeconds == 120)
        #expect(vendor.tokenTtlDays == 180)
        #expect(vendor.environment == .production)
        #expect(vendor.authenticationBanner == SileoSettings.Banner(message: "Sign in", button: "Sign in"))
        #expect(vendor.packages == [SileoSettings.Package(id: "org.example.tweak", product: "tweak.lifetime", amountMinor: 199, currency: "USD",
                                                          price: "$1.99", file: "tweak.deb")])
    }

    @Test("refused: a file outside the directory, a bad base path, a clear-text URL, a bad package id, both file and URL, an amount of its own, a product or currency the catalog does not price",
          arguments: [
            (yaml(package: "{id: a.b, product: p, currency: USD, price: x, file: ../etc/passwd}"), "sileo.vendors[0].packages[0].file"),
            (yaml(package: "{id: a.b, product: p, currency: USD, price: x, file: /etc/passwd}"), "sileo.vendors[0].packages[0].file"),
            (yaml(package: "{id: a.b, product: p, currency: USD, price: x, file: a.deb, downloadURL: \"https://x.example/a\"}"), "sileo.vendors[0].packages[0].file"),
            (yaml(package: "{id: ../a, product: p, currency: USD, price: x, file: a.deb}"), "sileo.vendors[0].packages[0].id"),
            (yaml(package: "{id: a.b, product: p, amount: 1, currency: USD, price: x, file: a.deb}"), "sileo.vendors[0].packages[0].amount"),
            (yaml(package: "{id: a.b, product: not.in.catalog, currency: USD, price: x, file: a.deb}"), "sileo.vendors[0].packages[0].product"),
            (yaml(package: "{id: a.b, product: p, currency: EUR, price: x, file: a.deb}"), "sileo.vendors[0].packages[0].currency"),
            (yaml(basePath: "/v1/sileo"), "sileo.vendors[0].basePath"),
            (yaml(basePath: "/sileo/../webhooks"), "sileo.vendors[0].basePath"),
            (yaml(basePath: "sileo"), "sileo.vendors[0].basePath"),
            (yaml(publicBaseURL: "http://pay.example.com"), "sileo.vendors[0].publicBaseURL"),
            // A loopback-looking prefix whose real host comes after the `@`.
            (yaml(publicBaseURL: "http://127.0.0.1:80@evil.example"), "sileo.vendors[0].publicBaseURL"),
            (yaml(publicBaseURL: "http://localhost.evil.example"), "sileo.vendors[0].publicBaseURL"),
            (yaml(package: "{id: a.b, product: p, currency: USD, price: x, downloadURL: \"https://x.example/a.deb\"}"),
             "sileo.vendors[0].downloadURLSecretFile"),
            (yaml(package: "{id: a.b, product: p, currency: USD, price: x, downloadURL: \"https://x.example/a.deb?v=1\"}",
                  secretFile: "/etc/dl.secret"), "sileo.vendors[0].packages[0].downloadURL"),
            (yaml(package: "{id: a.b, product: p, currency: USD, price: x, downloadURL: \"https://x.example\"}",
                  secretFile: "/etc/dl.secret"), "sileo.vendors[0].packages[0].downloadURL"),
          ])
    func refused(yaml: String, key: String) throws {
        #expect(throws: ConfigError.self) { try SenderCatalog.standard.parseConfig(yaml: yaml) }
        do { _ = try SenderCatalog.standard.parseConfig(yaml: yaml) } catch { #expect(error.key == key) }
    }

    @Test("a downloadURL package is read with the vendor's downloadURLSecretFile")
    func downloadURL() throws {
        let config = try SenderCatalog.standard.parseConfig(yaml: Self.yaml(
            package: "{id: a.b, product: p, currency: USD, price: x, downloadURL: \"https://files.example.com/debs/a.deb\"}",
            secretFile: "/etc/tollgate/sileo/download.secret"))
        let vendor = try #require(config.sileo.vendors.first)
        #expect(vendor.downloadURLSecretFile == "/etc/tollgate/sileo/download.secret")
        #expect(vendor.packages.first?.downloadURL == "https://files.example.com/debs/a.deb")
    }
}
