import Events
import Foundation
import Rejections
import TestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A Google purchase an app reports is checked with the Play Developer API (a local Google
/// answering as its reference shows) and stated as the events the projection applies.
@Suite("Google purchase verifier")
struct GooglePurchaseVerifierTests {
    static let token = "opaque-token-up-to-150-characters.AO-J1OzSecretPurchaseToken"
    static let day: Int64 = 86_400_000

    static func verifier(_ h: PlayHarness, nowMs: Int64) -> GooglePurchaseVerifier {
        GooglePurchaseVerifier(client: h.client, packages: [PlayHarness.package], now: { nowMs })
    }

    static func claim(_ product: String, token: String = token, package: String = PlayHarness.package) -> PurchaseClaim {
        .google(packageName: package, productId: product, purchaseToken: token)
    }

    /// A subscription just bought, not yet acknowledged, as `purchases.subscriptionsv2.get` answers it.
    static func newSubscription(startMs: Int64, test: Bool = false, state: String = "SUBSCRIPTION_STATE_ACTIVE") -> String {
        let start = Timestamp(millisecondsSince1970: startMs).rfc3339
        let expiry = Timestamp(millisecondsSince1970: startMs + 30 * day).rfc3339
        return #"""
        {
          "kind": "androidpublisher#subscriptionPurchaseV2",
          "regionCode": "US",
          "lineItems": [
            {
              "productId": "premium_monthly",
              "expiryTime": "\#(expiry)",
              "autoRenewingPlan": {
                "autoRenewEnabled": true,
                "recurringPrice": {"currencyCode": "USD", "units": "9", "nanos": 990000000}
              },
              "offerDetails": {"basePlanId": "monthly"},
              "latestSuccessfulOrderId": "GPA.3345-1111-2222-33333"
            }
          ],
          "startTime": "\#(start)",
          "subscriptionState": "\#(state)",
          "latestOrderId": "GPA.3345-1111-2222-33333",
          \#(test ? #""testPurchase": {},"# : "")
          "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING"
        }
        """#
    }

    /// A one-time product just bought, not yet acknowledged, as `purchases.productsv2` answers it;
    /// `purchaseState` as `ProductPurchase` numbered it (0 purchased, 1 canceled, 2 pending).
    static func newProduct(purchaseMs: Int64, test: Bool = false, purchaseState: Int = 0) -> String {
        let state = ["PURCHASED", "CANCELLED", "PENDING"][purchaseState]
        return PlayFixtures.productV2(productId: "lifetime_unlock", state: state, completedMs: purchaseState == 0 ? purchaseMs : nil,
                                      acknowledged: false, test: test, orderId: "GPA.3312-4444-5555-66666")
    }

    @Test("a subscription token: subscriptionsv2 only, stated as subscription.started with expiry, price and the acknowledgement owed")
    func subscription() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let startMs = nowMs - 3_600_000
        h.fake.store(Self.newSubscription(startMs: startMs), at: PlayHarness.subscriptionPath(Self.token))

        let purchases = try await Self.verifier(h, nowMs: nowMs).verify(Self.claim("premium_monthly"))
        // The Play API's own record, for /v1/validate's native transaction.
        #expect(purchases.first?.record == .playSubscription(
            state: "SUBSCRIPTION_STATE_ACTIVE", acknowledgementState: "ACKNOWLEDGEMENT_STATE_PENDING", regionCode: "US",
            lineItems: [.init(productId: "premium_monthly", expiryTime: Timestamp(millisecondsSince1970: startMs + 30 * Self.day))]))
        #expect(purchases.map { var p = $0; p.record = nil; return p } == [VerifiedPurchase(
            source: .google, app: PlayHarness.package, environment: .production, subject: Self.token, product: "premium_monthly",
            kind: .subscription, type: .subscriptionStarted, occurredAt: Timestamp(millisecondsSince1970: nowMs),
            transaction: NormalizedEvent.Transaction(id: "GPA.3345-1111-2222-33333", purchasedAt: Timestamp(millisecondsSince1970: startMs).rfc3339,
                                                     expiresAt: Timestamp(millisecondsSince1970: startMs + 30 * Self.day).rfc3339),
            price: NormalizedEvent.Price(amountMicros: 9_990_000, currency: "USD"),
            subscription: NormalizedEvent.Subscription(autoRenew: true),
            acknowledgement: PlayAcknowledgement(kind: .subscription, packageName: PlayHarness.package, productId: "premium_monthly",
                                                 purchaseToken: Self.token, deadlineMs: startMs + 3 * Self.day))])
        #expect(h.fake.apiTargets == [PlayHarness.subscriptionPath(Self.token)])
    }

    @Test("an acknowledged, auto-renew-off subscription owes nothing; an expired one is stated expired")
    func subscriptionStates() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        // Google's sample: a tester's prepaid plan, canceled, expired since 2022; acknowledgement still pending.
        h.fake.store(PlayFixtures.canceledPrepaidSubscription, at: PlayHarness.subscriptionPath("prepaid"))
        let expired = try await Self.verifier(h, nowMs: Timestamp.now.millisecondsSince1970).verify(Self.claim("premium_prepaid", token: "prepaid"))
        #expect(expired.first?.type == .subscriptionExpired)
        #expect(expired.first?.environment == .sandbox)
        // Nothing to acknowledge for a purchase that entitles nobody.
        #expect(expired.first?.acknowledgement == nil)

        h.fake.store(PlayFixtures.activeSubscription, at: PlayHarness.subscriptionPath("acked"))
        let nowMs = Timestamp(rfc3339: "2022-05-01T00:00:00Z")?.millisecondsSince1970 ?? 0
        let active = try await Self.verifier(h, nowMs: nowMs).verify(Self.claim("premium_monthly", token: "acked"))
        #expect(active.first?.type == .subscriptionStarted)
        // The user the app named at purchase (obfuscatedAccountId): every notification gives the purchase to them.
        #expect(active.first?.owner == "obfuscated-acc-id-aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789")
        #expect(active.first?.acknowledgement == nil)
        #expect(active.first?.price == nil)
    }

    @Test("a one-time token: subscriptionsv2 does not know it, productsv2 does: purchase.completed with the acknowledgement owed")
    func oneTime() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let boughtMs = nowMs - 60_000
        h.fake.store(Self.newProduct(purchaseMs: boughtMs), at: PlayHarness.productPath(Self.token))

        let purchases = try await Self.verifier(h, nowMs: nowMs).verify(Self.claim("lifetime_unlock"))
        #expect(purchases.first?.record == .playProduct(purchaseState: 0, consumptionState: 0, acknowledgementState: 0, regionCode: "US"))
        #expect(purchases.map { var p = $0; p.record = nil; return p } == [VerifiedPurchase(
            source: .google, app: PlayHarness.package, environment: .production, subject: Self.token, product: "lifetime_unlock",
            kind: .oneTime, type: .purchaseCompleted, occurredAt: Timestamp(millisecondsSince1970: nowMs),
            transaction: NormalizedEvent.Transaction(id: "GPA.3312-4444-5555-66666", purchasedAt: Timestamp(millisecondsSince1970: boughtMs).rfc3339,
                                                     quantity: 1, purchaseOption: "buy"),
            acknowledgement: PlayAcknowledgement(kind: .product, packageName: PlayHarness.package, productId: "lifetime_unlock",
                                                 purchaseToken: Self.token, deadlineMs: boughtMs + 3 * Self.day))])
        #expect(h.fake.apiTargets == [PlayHarness.subscriptionPath(Self.token), PlayHarness.productPath(Self.token)])
    }

    @Test("a license tester's purchase is a sandbox one: testPurchase in subscriptionsv2, testPurchaseContext in productsv2")
    func sandbox() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        h.fake.store(Self.newSubscription(startMs: nowMs - 1_000, test: true), at: PlayHarness.subscriptionPath("tester-sub"))
        h.fake.store(Self.newProduct(purchaseMs: nowMs - 1_000, test: true), at: PlayHarness.productPath("tester-one"))
        let verifier = Self.verifier(h, nowMs: nowMs)
        #expect(try await verifier.verify(Self.claim("premium_monthly", token: "tester-sub")).map(\.environment) == [.sandbox])
        #expect(try await verifier.verify(Self.claim("lifetime_unlock", token: "tester-one")).map(\.environment) == [.sandbox])
    }

    @Test("an unknown token, or a subscription or purchase of another product, is 422 purchase_not_found, never quoting the token")
    func notFound() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let verifier = Self.verifier(h, nowMs: nowMs)
        let unknown = await Self.refusal { try await verifier.verify(Self.claim("lifetime_unlock")) }
        #expect(unknown?.reason == .purchaseNotFound)
        #expect(unknown?.reason.httpStatus == 422)

        h.fake.store(Self.newSubscription(startMs: nowMs), at: PlayHarness.subscriptionPath(Self.token))
        let otherSubscription = await Self.refusal { try await verifier.verify(Self.claim("premium_yearly")) }
        #expect(otherSubscription?.reason == .purchaseNotFound)

        h.fake.store(Self.newProduct(purchaseMs: nowMs), at: PlayHarness.productPath("one-time"))
        let otherProduct = await Self.refusal { try await verifier.verify(Self.claim("coins_100", token: "one-time")) }
        #expect(otherProduct?.reason == .purchaseNotFound)

        // 410: Google no longer keeps the purchase.
        h.fake.script(PlayHarness.productPath("gone"), .reply(.json(410, #"{"error": {"code": 410, "message": "The purchase token is no longer valid.", "status": "GONE"}}"#)))
        let gone = await Self.refusal { try await verifier.verify(Self.claim("coins_100", token: "gone")) }
        #expect(gone?.reason == .purchaseNotFound)
        for refusal in [unknown, otherSubscription, otherProduct, gone] {
            #expect(refusal?.message.contains(Self.token) == false)
            #expect(refusal?.retryAfterSeconds == nil)
        }
    }

    @Test("a package not in sources.google.packages is 403 unknown_package, asked of nobody; without Play API credentials 403 play_api_not_configured")
    func notConfigured() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let unknown = await Self.refusal {
            try await Self.verifier(h, nowMs: 0).verify(Self.claim("premium_monthly", package: "com.example.other"))
        }
        #expect(unknown?.reason == .unknownPackage)
        #expect(unknown?.reason.httpStatus == 403)
        #expect(h.fake.apiTargets.isEmpty)
        #expect(h.fake.tokenRequests == 0)

        let unconfigured = await Self.refusal {
            try await GooglePurchaseVerifier(client: nil, packages: [PlayHarness.package]).verify(Self.claim("premium_monthly"))
        }
        #expect(unconfigured?.reason == .playAPINotConfigured)
        #expect(unconfigured?.reason.httpStatus == 403)
        #expect(unconfigured?.message.contains("sources.google.playApi.credentialsFile") == true)
    }

    @Test("Google down is 503 store_api_unavailable with a Retry-After: a 5xx, a 429 with Google's, a refused connection")
    func googleDown() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let verifier = Self.verifier(h, nowMs: Timestamp.now.millisecondsSince1970)
        h.fake.script(PlayHarness.subscriptionPath(Self.token),
                      .reply(.json(503, #"{"error": {"code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}}"#)))
        let unavailable = await Self.refusal { try await verifier.verify(Self.claim("premium_monthly")) }
        #expect(unavailable?.reason == .storeAPIUnavailable)
        #expect(unavailable?.reason.httpStatus == 503)
        #expect(unavailable?.retryAfterSeconds == GooglePurchaseVerifier.defaultRetryAfterSeconds)

        // Not a subscription token, and the product lookup is rate limited.
        h.fake.script(PlayHarness.productPath(Self.token),
                      .reply(LoopbackHTTPServer.Reply(status: 429, headers: [("Content-Type", "application/json"), ("Retry-After", "120")],
                                                      body: Array(#"{"error": {"code": 429, "message": "Rate limit exceeded.", "status": "RESOURCE_EXHAUSTED"}}"#.utf8))))
        let limited = await Self.refusal { try await verifier.verify(Self.claim("lifetime_unlock")) }
        #expect(limited?.reason == .storeAPIUnavailable)
        #expect(limited?.retryAfterSeconds == 120)

        h.fake.stop()
        let refused = await Self.refusal { try await verifier.verify(Self.claim("premium_monthly")) }
        #expect(refused?.reason == .storeAPIUnavailable)
        #expect(refused?.retryAfterSeconds == GooglePurchaseVerifier.defaultRetryAfterSeconds)
        for refusal in [unavailable, limited, refused] { #expect(refusal?.message.contains(Self.token) == false) }
    }

    @Test("another store's claim is not Google's to verify: no purchases, no call")
    func otherClaims() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        #expect(try await Self.verifier(h, nowMs: 0).verify(.appleTransactionId("2000000123456789", bundleId: "com.example.app")).isEmpty)
        #expect(h.fake.tokenRequests == 0)
    }

    /// The refusal `body` throws; nil when it verifies (or throws something else, which fails the expectation after it).
    static func refusal(_ body: () async throws -> [VerifiedPurchase]) async -> Rejection? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error as? Rejection
        }
    }
}
