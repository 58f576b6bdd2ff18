import Foundation
import Testing
import Toolkit

/// The catalog as the binary reads it (`tollgate describe --config`), and the user tokens
/// `tollgate user-token` signs as a merchant's backend would.
@Suite("tollgate describe --config, tollgate user-token")
struct CatalogCommandTests {
    @Test("describe --config lists each app's ids and products with their prices and entitlements")
    func describeListsTheCatalog() async throws {
        let path = try CLI.temporaryFile("tollgate.yaml", """
            catalog:
              apps:
                - { name: Shop, ids: [com.example.shop, shop-citcon], products: [{ id: pro.monthly, apple: com.example.pro, prices: { USD: 1999 }, entitlements: [pro] }] }
            """)
        let result = try await CLI.run(["describe", "--config", path])
        #expect(result.status == 0, "\(result.stderr)")
        let catalog = try #require(JSONValue.parse(Array(result.stdout.utf8))?["catalog"]?.array)
        #expect(catalog.first?["ids"]?.array?.compactMap(\.string) == ["com.example.shop", "shop-citcon"])
        let product = try #require(catalog.first?["products"]?.array?.first)
        #expect(product["id"]?.string == "pro.monthly" && product["apple"]?.string == "com.example.pro")
        #expect(product["prices"]?["USD"]?.int64 == 1999)
        #expect(product["entitlements"]?.array?.compactMap(\.string) == ["pro"])
    }

    @Test("user-token signs an ES256 token for the app and user that the key's public half verifies; a key that is not P-256 is refused")
    func userToken() async throws {
        let key = try #require(PrivateKey.generateP256())
        let path = try CLI.temporaryFile("backend.pem", try #require(key.pem))
        let result = try await CLI.run(["user-token", "--key", path, "--app", "com.example.shop", "--user", "alice"])
        #expect(result.status == 0, "\(result.stderr)")
        let jws = try CompactJWS(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(try jws.header()["alg"]?.string == "ES256")
        #expect(try #require(key.publicKey).verifyES256(message: Array(jws.signingInput), signature: jws.signature))
        let claims = try #require(JSONValue.parse(jws.payload))
        #expect(claims["sub"]?.string == "alice" && claims["aud"]?.string == "com.example.shop")
        let rsa = try CLI.temporaryFile("rsa.pem", try #require(PrivateKey.generateRSA()?.pem))
        let refused = try await CLI.run(["user-token", "--key", rsa, "--app", "a", "--user", "b"])
        #expect(refused.status != 0)
    }
}
