import TestSupport
import Events
import Foundation
import Merchant
import ProviderAPIs
import Testing
import Workers

/// The Play Developer API client against a local Google: what it decodes, the paths it asks for,
/// and how it gets, keeps and renews its access token.
@Suite("Play API: purchases and access tokens")
struct PlayAPIClientTests {
    static let token = "kmgpcmjdnlfcbihnhcebkahb.AO-J1OxCurrentPurchaseToken_-42"

    @Test("a subscription decodes with every field the workers read")
    func subscription() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath(Self.token))

        let purchase = try #require(try await h.client.subscription(packageName: PlayHarness.package, token: Self.token))
        #expect(purchase.kind == "androidpublisher#subscriptionPurchaseV2")
        #expect(purchase.subscriptionState == .active)
        #expect(purchase.regionCode == "US")
        #expect(purchase.startTime == Timestamp(rfc3339: "2022-04-22T18:39:58.270Z"))
        #expect(purchase.linkedPurchaseToken == "kmgpcmjdnlfcbihnhcebkahb.AO-J1OzPreviousPurchaseToken")
        #expect(purchase.lineItems?.first?.latestSuccessfulOrderId == "GPA.3345-1234-5678-90123")
        #expect(purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        #expect(purchase.externalAccountIdentifiers?.obfuscatedExternalAccountId == "obfuscated-acc-id-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789")
        #expect(purchase.externalAccountIdentifiers?.obfuscatedExternalProfileId == "obfuscated-profile-id-9876543210")
        #expect(purchase.externalAccountIdentifiers?.externalAccountId == "user-ext-acc-88765")
        #expect(purchase.pausedStateContext == nil && purchase.canceledStateContext == nil && purchase.testPurchase == nil)

        let item = try #require(purchase.lineItems?.first)
        #expect(purchase.lineItems?.count == 1)
        #expect(item.productId == "premium_monthly")
        #expect(item.expiryTime?.millisecondsSince1970 == 1_653_244_798_270)
        #expect(item.autoRenewingPlan?.autoRenewEnabled == true)
        #expect(item.prepaidPlan == nil)
        #expect(item.offerDetails?.basePlanId == "monthly")
        #expect(item.offerDetails?.offerId == "intro-offer")
        #expect(item.offerDetails?.offerTags == ["intro", "winback"])
        #expect(item.latestSuccessfulOrderId == "GPA.3345-1234-5678-90123")
        #expect(purchase.latestExpiryTime == item.expiryTime)
        #expect(h.fake.jwtProblems.isEmpty)
    }

    @Test("canceled, prepaid, test and paused subscriptions; unknown states and fields")
    func otherSubscriptions() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.canceledPrepaidSubscription, at: PlayHarness.subscriptionPath("canceled"))
        h.fake.store(PlayFixtures.pausedSubscriptionWithNewState, at: PlayHarness.subscriptionPath("paused"))

        let canceled = try #require(try await h.client.subscription(packageName: PlayHarness.package, token: "canceled"))
        #expect(canceled.subscriptionState == .canceled)
        #expect(canceled.testPurchase != nil)
        #expect(canceled.canceledStateContext?.userInitiatedCancellation?.cancelTime == Timestamp(rfc3339: "2022-04-23T09:00:00.500Z"))
        #expect(canceled.canceledStateContext?.systemInitiatedCancellation == nil)
        #expect(canceled.startTime?.millisecondsSince1970 == 1_650_652_798_270)
        let item = try #require(canceled.lineItems?.first)
        #expect(item.autoRenewingPlan == nil)
        #expect(item.prepaidPlan?.allowExtendAfterTime == Timestamp(rfc3339: "2022-04-26T18:39:58Z"))
        #expect(item.expiryTime == Timestamp(rfc3339: "2022-04-29T18:39:58.270Z"))
        #expect(item.offerDetails?.offerId == nil)
        #expect(canceled.externalAccountIdentifiers == nil)

        let paused = try #require(try await h.client.subscription(packageName: PlayHarness.package, token: "paused"))
        #expect(paused.subscriptionState?.rawValue == "SUBSCRIPTION_STATE_SOMETHING_NEW")
        #expect(paused.subscriptionState?.isKnown == false)
        #expect(paused.pausedStateContext?.autoResumeTime == Timestamp(rfc3339: "2022-06-01T00:00:00Z"))
        #expect(paused.lineItems == [] && paused.latestExpiryTime == nil)
    }

    @Test("a one-time product purchase decodes")
    func product() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.product, at: PlayHarness.productPath(Self.token))

        let purchase = try #require(try await h.client.product(packageName: PlayHarness.package, token: Self.token))
        #expect(purchase.kind == "androidpublisher#productPurchaseV2")
        #expect(purchase.purchaseCompletionTime == Timestamp(rfc3339: "2022-04-22T18:39:58.270Z"))
        #expect(purchase.purchaseState == "PURCHASED")
        #expect(purchase.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        #expect(purchase.testPurchaseContext == nil)
        #expect(purchase.orderId == "GPA.3312-5678-9012-34567")
        let item = try #require(purchase.lineItem("coins_100"))
        #expect(item.productOfferDetails?.purchaseOptionId == "coins-buy" && item.productOfferDetails?.offerTags == ["bulk"])
        #expect(item.productOfferDetails?.quantity == 2 && item.productOfferDetails?.refundableQuantity == 2)
        #expect(item.productOfferDetails?.consumptionState == "CONSUMPTION_STATE_YET_TO_BE_CONSUMED")
        #expect(item.productOfferDetails?.rentOfferDetails == nil && purchase.lineItem("coins_500") == nil)
        #expect(purchase.obfuscatedExternalAccountId == "obfuscated-acc-id-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789")
        #expect(purchase.obfuscatedExternalProfileId == "obfuscated-profile-id-9876543210")
        #expect(purchase.regionCode == "GB")
    }

    @Test("410 Gone is no purchase, not an error")
    func gone() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let gone = FakeGooglePlay.Scripted.reply(.json(410, #"{"error": {"code": 410, "message": "The subscription purchase is no longer available for query because it has been expired for too long.", "status": "GONE"}}"#))
        h.fake.script(PlayHarness.subscriptionPath("old"), gone)
        h.fake.script(PlayHarness.productPath("old"), gone)

        #expect(try await h.client.subscription(packageName: PlayHarness.package, token: "old") == nil)
        #expect(try await h.client.product(packageName: PlayHarness.package, token: "old") == nil)
    }

    @Test("path segments are percent-encoded: only unreserved characters pass as they are")
    func oddToken() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let token = "a.B-c_d~e/f?g#h i%j+k&l=m:n;o@p,q'r(s)t*u!v$w[x]y\u{E9}"
        let encoded = "a.B-c_d~e%2Ff%3Fg%23h%20i%25j%2Bk%26l%3Dm%3An%3Bo%40p%2Cq%27r%28s%29t%2Au%21v%24w%5Bx%5Dy%C3%A9"
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath(encoded))
        h.fake.store(PlayFixtures.product, at: PlayHarness.productPath(encoded))

        #expect(try await h.client.subscription(packageName: PlayHarness.package, token: token) != nil)
        #expect(try await h.client.product(packageName: PlayHarness.package, token: token) != nil)
        h.fake.store(PlayFixtures.oneTimeProduct(productId: "coins/100"), at: PlayHarness.oneTimeProductPath("coins%2F100"))
        let catalog = try #require(try await h.client.oneTimeProduct(packageName: PlayHarness.package, productId: "coins/100"))
        #expect(catalog.rentalEnd(option: "rent", from: Timestamp(millisecondsSince1970: 0)) == Timestamp(millisecondsSince1970: 2 * 86_400_000))
        #expect(catalog.rentalEnd(option: "buy", from: Timestamp(millisecondsSince1970: 0)) == nil)
        #expect(h.fake.apiTargets == [PlayHarness.subscriptionPath(encoded), PlayHarness.productPath(encoded),
                                      PlayHarness.oneTimeProductPath("coins%2F100")])

        // A segment a URL would drop or resolve is refused before anything is sent.
        for bad in ["", ".", ".."] {
            let error = await #expect(throws: PlayAPIError.self) { try await h.client.subscription(packageName: PlayHarness.package, token: bad) }
            #expect(error?.kind == .invalidArgument && error?.isTransient == false)
        }
        #expect(h.fake.apiTargets.count == 3)
    }

    @Test("the access token is fetched once and reused across calls")
    func tokenReused() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath(Self.token))
        h.fake.store(PlayFixtures.product, at: PlayHarness.productPath(Self.token))

        for _ in 0..<3 {
            _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
            _ = try await h.client.product(packageName: PlayHarness.package, token: Self.token)
        }
        #expect(h.fake.tokenRequests == 1)
        #expect(h.fake.apiTargets.count == 6)
        // The JWT was issued at the client's clock.
        #expect(h.fake.issuedAts == [Int64(h.clock.now.timeIntervalSince1970)])
    }

    @Test("a token within a minute of expiry is renewed before use")
    func tokenNearExpiry() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath(Self.token))
        let start = Int64(h.clock.now.timeIntervalSince1970)

        _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        h.clock.advance(seconds: 3530)  // 70 s left: still used
        _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        #expect(h.fake.tokenRequests == 1)

        h.clock.advance(seconds: 15)  // 55 s left: renewed
        _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        #expect(h.fake.tokenRequests == 2)
        #expect(h.fake.issuedAts == [start, start + 3545])

        // A short-lived token is renewed on its own schedule.
        h.fake.setTokenLifetime(100)
        h.clock.advance(seconds: 3600)
        _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        h.clock.advance(seconds: 39)
        _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        #expect(h.fake.tokenRequests == 3)
        h.clock.advance(seconds: 2)
        _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        #expect(h.fake.tokenRequests == 4)
        #expect(h.fake.jwtProblems.isEmpty)
    }

    @Test("concurrent first calls share one token request")
    func singleFlight() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath(Self.token))
        h.fake.setTokenDelay(0.3)

        let client = h.client
        let states = try await withThrowingTaskGroup(of: SubscriptionState?.self) { group in
            for _ in 0..<8 {
                group.addTask { try await client.subscription(packageName: PlayHarness.package, token: Self.token)?.subscriptionState }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(states == Array(repeating: .active, count: 8))
        #expect(h.fake.tokenRequests == 1)
        #expect(h.fake.apiTargets.count == 8)
    }

    @Test("a 401 from the API drops the token, fetches a new one and retries once")
    func unauthorizedRetried() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath(Self.token))

        _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        h.fake.revokeTokens()
        let purchase = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        #expect(purchase?.subscriptionState == .active)
        #expect(h.fake.tokenRequests == 2)
        #expect(h.fake.apiTargets.count == 3)

        // The new token is kept.
        _ = try await h.client.subscription(packageName: PlayHarness.package, token: Self.token)
        #expect(h.fake.tokenRequests == 2)
    }
}

@Suite("Play API: acknowledgement")
struct PlayAcknowledgementTests {
    static let token = "kmgpcmjdnlfcbihnhcebkahb.AO-J1OxAcknowledgedToken_-42"

    @Test("a subscription and a product are acknowledged with a POST to :acknowledge and an empty JSON object")
    func acknowledge() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath(Self.token))
        h.fake.store(PlayFixtures.product, at: PlayHarness.productPath(Self.token))
        #expect(try await h.client.acknowledgeSubscription(packageName: PlayHarness.package, subscriptionId: "premium_monthly", token: Self.token))
        #expect(try await h.client.acknowledgeProduct(packageName: PlayHarness.package, productId: "coins_100", token: Self.token))
        #expect(h.fake.acknowledged == [
            "/androidpublisher/v3/applications/\(PlayHarness.package)/purchases/subscriptions/premium_monthly/tokens/\(Self.token)",
            PlayHarness.productAckPath("coins_100", Self.token),
        ])
        #expect(h.fake.jwtProblems.isEmpty)
    }

    @Test("an unknown purchase is a permanent error; a purchase Google no longer keeps (410) is false")
    func failures() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        do {
            _ = try await h.client.acknowledgeProduct(packageName: PlayHarness.package, productId: "coins_100", token: "unknown")
            Issue.record("an unknown purchase was acknowledged")
        } catch {
            #expect(error.kind == .http(status: 404))
            #expect(!error.isTransient)
        }
        h.fake.script(PlayHarness.productAckPath("coins_100", "gone") + ":acknowledge",
                      .reply(.json(410, #"{"error": {"code": 410, "message": "The purchase is no longer available.", "status": "GONE"}}"#)))
        #expect(try await h.client.acknowledgeProduct(packageName: PlayHarness.package, productId: "coins_100", token: "gone") == false)
        #expect(h.fake.acknowledged.isEmpty)
    }
}
