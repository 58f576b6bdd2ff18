import Foundation
import Logging
import Merchant
import Outbound
import ProviderAPIs
import TestSupport
import Toolkit
import Verifiers
import Workers

/// A `PlayAPIClient` on the real `HTTPClientFetcher`, talking to a `FakeGooglePlay`, with a clock the
/// test moves. The key file is written and read back as the workers do.
struct PlayHarness {
    let fake: FakeGooglePlay
    let client: PlayAPIClient
    let clock: TestClock

    static let package = "com.example.tollgate"

    /// - Parameter clientKey: the key in the client's file; by default the one the fake knows.
    static func start(timeout: Duration = .seconds(5), clientKey: PrivateKey? = nil) async throws -> PlayHarness {
        let known = try await TestServiceAccount.key.value
        guard let publicKey = known.publicKey else { throw CocoaError(.featureUnsupported) }
        let clock = TestClock()
        let fake = FakeGooglePlay(publicKey: publicKey, clientEmail: TestServiceAccount.email, keyId: TestServiceAccount.keyId,
                                  now: { clock.now })
        let path = try await TestServiceAccount.write(TestServiceAccount.json(key: clientKey ?? known))
        let key: ServiceAccountKey
        do {
            key = try await offPool { try ServiceAccountKey.load(path: path) }
        } catch {
            await TestServiceAccount.remove(path)
            throw error
        }
        await TestServiceAccount.remove(path)
        var logger = Logger(label: "play-api-test")
        logger.logLevel = .critical
        let client = PlayAPIClient(key: key, baseURL: fake.baseURL, tokenURL: fake.tokenURL, fetcher: HTTPClientFetcher(),
                                   timeout: timeout, logger: logger, now: { clock.now })
        return PlayHarness(fake: fake, client: client, clock: clock)
    }

    func stop() { fake.stop() }

    static func subscriptionPath(_ encodedToken: String) -> String {
        "/androidpublisher/v3/applications/\(package)/purchases/subscriptionsv2/tokens/\(encodedToken)"
    }

    /// `purchases.productsv2.getproductpurchasev2`: a one-time purchase by its token alone.
    static func productPath(_ encodedToken: String) -> String {
        "/androidpublisher/v3/applications/\(package)/purchases/productsv2/tokens/\(encodedToken)"
    }

    /// `purchases.products.acknowledge` (no v2 exists): by product and token.
    static func productAckPath(_ encodedProductId: String, _ encodedToken: String) -> String {
        "/androidpublisher/v3/applications/\(package)/purchases/products/\(encodedProductId)/tokens/\(encodedToken)"
    }

    static func oneTimeProductPath(_ productId: String) -> String {
        "/androidpublisher/v3/applications/\(package)/oneTimeProducts/\(productId)"
    }
}
