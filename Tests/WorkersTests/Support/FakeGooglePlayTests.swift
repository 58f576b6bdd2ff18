import Events
import Foundation
import Logging
import Outbound
import ProviderAPIs
import TestSupport
import Testing
import Toolkit
@testable import Merchant

/// The Play fake refuses what Google refuses (the Android Publisher reference and Google's OAuth
/// documentation): a test that passes against it would pass against Google.
@Suite("Fake Google Play refuses what Google refuses")
struct FakeGooglePlayTests {
    static let token = "fake-test-token.AO-J1Oz"

    static func status(_ call: () async throws(PlayAPIError) -> Bool) async -> Int? {
        do throws(PlayAPIError) {
            return try await call() ? 200 : 410
        } catch {
            if case .http(let status) = error.kind { return status }
            return nil
        }
    }

    @Test("an acknowledgement at another kind or product, of an unpaid purchase or of an unknown token is refused and not recorded")
    func acknowledgements() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let package = PlayHarness.package
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: nowMs), at: PlayHarness.subscriptionPath("subscription"))
        h.fake.store(GooglePurchaseVerifierTests.newProduct(purchaseMs: nowMs), at: PlayHarness.productPath("product"))
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: nowMs, state: "SUBSCRIPTION_STATE_PENDING"),
                     at: PlayHarness.subscriptionPath("pending-subscription"))
        for (state, token) in [(1, "canceled-product"), (2, "pending-product")] {
            h.fake.store(GooglePurchaseVerifierTests.newProduct(purchaseMs: nowMs, purchaseState: state), at: PlayHarness.productPath(token))
        }
        let client = h.client
        // A subscription's token through the products call, and a product's through the subscriptions call.
        #expect(await Self.status { () async throws(PlayAPIError) in
            try await client.acknowledgeProduct(packageName: package, productId: "premium_monthly", token: "subscription") } == 400)
        #expect(await Self.status { () async throws(PlayAPIError) in
            try await client.acknowledgeSubscription(packageName: package, subscriptionId: "lifetime_unlock", token: "product") } == 400)
        // A product's token under another product id.
        #expect(await Self.status { () async throws(PlayAPIError) in
            try await client.acknowledgeProduct(packageName: package, productId: "other_product", token: "product") } == 400)
        // Not paid: Google refuses until it is.
        #expect(await Self.status { () async throws(PlayAPIError) in
            try await client.acknowledgeSubscription(packageName: package, subscriptionId: "premium_monthly", token: "pending-subscription") } == 400)
        for token in ["canceled-product", "pending-product"] {
            #expect(await Self.status { () async throws(PlayAPIError) in
                try await client.acknowledgeProduct(packageName: package, productId: "lifetime_unlock", token: token) } == 400, "\(token)")
        }
        #expect(await Self.status { () async throws(PlayAPIError) in
            try await client.acknowledgeProduct(packageName: package, productId: "lifetime_unlock", token: "never-issued") } == 404)
        #expect(h.fake.acknowledged.isEmpty)

        // Each at its own kind: taken, and only that purchase reads acknowledged.
        #expect(await Self.status { () async throws(PlayAPIError) in
            try await client.acknowledgeSubscription(packageName: package, subscriptionId: "premium_monthly", token: "subscription") } == 200)
        #expect(await Self.status { () async throws(PlayAPIError) in
            try await client.acknowledgeProduct(packageName: package, productId: "lifetime_unlock", token: "product") } == 200)
        #expect(try await client.subscription(packageName: package, token: "subscription")?.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        #expect(try await client.product(packageName: package, token: "product")?.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        #expect(try await client.subscription(packageName: package, token: "pending-subscription")?.acknowledgementState == "ACKNOWLEDGEMENT_STATE_PENDING")
    }

    @Test("an access token past its lifetime on Google's clock is 401; an assertion whose iat is far from that clock gets no token")
    func clock() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(GooglePurchaseVerifierTests.newSubscription(startMs: Timestamp.now.millisecondsSince1970), at: PlayHarness.subscriptionPath(Self.token))
        #expect(try await h.client.subscription(packageName: PlayHarness.package, token: Self.token) != nil)
        let issued = try #require(h.fake.issuedTokens.last)
        let fetcher = HTTPClientFetcher()
        func get(_ bearer: String) async throws -> Int {
            try await fetcher.fetch(HTTPFetchRequest(url: h.fake.baseURL + PlayHarness.subscriptionPath(Self.token),
                                                     headers: [("Authorization", "Bearer " + bearer)], timeout: .seconds(5))).status
        }
        #expect(try await get(issued) == 200)
        #expect(try await get("ya29.never-issued") == 401)
        h.clock.advance(seconds: 3_601)
        #expect(try await get(issued) == 401, "expired on Google's clock")

        // A client whose clock is two hours behind Google's signs an assertion Google will not take.
        let known = try await TestServiceAccount.key.value
        let path = try await TestServiceAccount.write(TestServiceAccount.json(key: known))
        let key = try ServiceAccountKey.load(path: path)
        await TestServiceAccount.remove(path)
        var logger = Logger(label: "fake-play-test")
        logger.logLevel = .critical
        let skewed = PlayAPIClient(key: key, baseURL: h.fake.baseURL, tokenURL: h.fake.tokenURL, fetcher: fetcher, timeout: .seconds(5),
                                   logger: logger, now: { h.clock.now.addingTimeInterval(-7_200) })
        await #expect(throws: PlayAPIError.self) { try await skewed.subscription(packageName: PlayHarness.package, token: Self.token) }
        #expect(h.fake.jwtProblems.contains { $0.hasPrefix("iat ") }, "\(h.fake.jwtProblems)")
    }
}
