import Config
import Entitlements
import Events
import Foundation
import StoreTestSupport
import TestSupport
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Play Billing 8's one-time products read through `purchases.productsv2`: several units, purchase options
/// and offers, quantity-based partial refunds, rentals whose period the Play catalog states; and
/// `subscriptionsv2`'s current fields. Against a local Google answering as its reference shows.
@Suite("Google purchase options")
struct PlayPurchaseOptionsTests {
    static let tokens = [APIToken(ApplePurchases.token)]

    static func key(_ token: String) -> PurchaseKey {
        PurchaseKey(source: "google", app: PlayHarness.package, environment: "production", subject: token)
    }

    @Test("a purchase of three units entitles with three; a quantity-based partial refund leaves two, still entitled; refunded in full, none",
          arguments: Backend.allCases)
    func multiQuantity(backend: Backend) async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let token = "three-coins.AO-J1OzSecret"
        h.fake.store(PlayFixtures.productV2(quantity: 3, option: "coins-bulk", offerId: "spring-sale", completedMs: nowMs - 60_000),
                     at: PlayHarness.productPath(token))
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let enricher = GooglePlayEnricher(client: h.client)
                let (setup, _) = GooglePurchasesEndToEndTests.setup(h, store: store, reads: enricher.reads)
                try await harness.withWorkers(store: store, playAPI: enricher, purchases: setup, apiTokens: Self.tokens) { workers async throws in
                    let first = try await PurchaseCalls.post(workers.workers.purchases,
                                                             GooglePurchasesEndToEndTests.body(user: "user-m", product: "coins_100", token: token))
                    #expect(first.status == 200, "\(first.text)")
                    #expect(first.body?.entitlements?.map(\.product) == ["coins_100"])
                    #expect(try await store.purchase(Self.key(token))?.quantity == 3)
                    // The event says how it was sold: units, purchase option, offer; never the token.
                    let events = try await harness.records(harness.topics.events)
                    let sold = try #require(events.last.map { String(decoding: $0.value, as: UTF8.self) })
                    #expect(sold.contains(#""quantity":3"#) && sold.contains(#""purchaseOption":"coins-bulk""#) && sold.contains(#""offerId":"spring-sale""#))
                    let id = try #require(first.body?.purchases?.first?.purchaseId)

                    // One unit refunded at Google: the refresh reads refundableQuantity 2.
                    h.fake.store(PlayFixtures.productV2(quantity: 3, refundable: 2, option: "coins-bulk", offerId: "spring-sale",
                                                        completedMs: nowMs - 60_000), at: PlayHarness.productPath(token))
                    let partly = try await PurchaseRefreshTests.refresh(workers, id)
                    #expect(partly.status == 200 && partly.text.contains(#""changed":true"#), "\(partly.text)")
                    #expect(try await store.purchase(Self.key(token))?.quantity == 2)
                    let held = try await store.entitlements(app: PlayHarness.package, user: "user-m")?.first
                    #expect(held?.isActive(atMs: Timestamp.now.millisecondsSince1970) == true && held?.quantity == 2)

                    // Every unit refunded: nothing held.
                    h.fake.store(PlayFixtures.productV2(quantity: 3, refundable: 0, option: "coins-bulk", completedMs: nowMs - 60_000),
                                 at: PlayHarness.productPath(token))
                    let none = try await PurchaseRefreshTests.refresh(workers, id)
                    #expect(none.status == 200 && none.text.contains(#""type":"purchase.refunded""#), "\(none.text)")
                    let purchase = try await store.purchase(Self.key(token))
                    #expect(purchase?.state == .refunded && purchase?.quantity == 0)
                    #expect(try await store.entitlements(app: PlayHarness.package, user: "user-m")?.first?.isActive(atMs: Timestamp.now.millisecondsSince1970) == false)
                    // Read through productsv2 only: no retired per-product purchase read.
                    #expect(!h.fake.apiTargets.contains { $0.contains("/purchases/products/") && !$0.hasSuffix(":acknowledge") })
                }
            }
        }
    }

    @Test("a rental entitles until its purchase option's rental period (from the Play catalog) ends after completion; a rental whose period cannot be read entitles nothing")
    func rental() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let completedMs = nowMs - 3_600_000
        h.fake.store(PlayFixtures.productV2(productId: "movie_hd", option: "rent", rental: true, completedMs: completedMs),
                     at: PlayHarness.productPath("rented"))
        h.fake.store(PlayFixtures.oneTimeProduct(productId: "movie_hd", rentalPeriod: "P2D"), at: PlayHarness.oneTimeProductPath("movie_hd"))
        h.fake.store(PlayFixtures.productV2(productId: "movie_4k", option: "rent", rental: true, completedMs: completedMs),
                     at: PlayHarness.productPath("rented-unknown"))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let enricher = GooglePlayEnricher(client: h.client)
                let (setup, _) = GooglePurchasesEndToEndTests.setup(h, store: store, reads: enricher.reads)
                try await harness.withWorkers(store: store, playAPI: enricher, purchases: setup, apiTokens: Self.tokens) { workers async throws in
                    let rented = try await PurchaseCalls.post(workers.workers.purchases,
                                                              GooglePurchasesEndToEndTests.body(user: "user-f", product: "movie_hd", token: "rented"))
                    #expect(rented.status == 200, "\(rented.text)")
                    let end = completedMs + 2 * 86_400_000
                    #expect(rented.body?.purchases?.first?.type == "purchase.completed")
                    #expect(try await store.purchase(Self.key("rented"))?.expiresAtMs == end)
                    let entitlement = try await store.entitlements(app: PlayHarness.package, user: "user-f")?.first
                    #expect(entitlement?.expiresAtMs == end && entitlement?.isActive(atMs: nowMs) == true)
                    #expect(entitlement?.isActive(atMs: end + 1) == false, "the rental ends with its period")

                    // The catalog has no such product (404): refused, nothing published, nothing entitled.
                    let before = try await harness.records(harness.topics.events).count
                    let unknown = try await PurchaseCalls.post(workers.workers.purchases,
                                                               GooglePurchasesEndToEndTests.body(user: "user-f", product: "movie_4k", token: "rented-unknown"))
                    #expect(unknown.status == 503 && unknown.error == "store_api_unavailable", "\(unknown.text)")
                    #expect(try await harness.records(harness.topics.events).count == before)
                    #expect(try await store.purchase(Self.key("rented-unknown")) == nil)
                }
            }
        }
    }

    @Test("subscriptionsv2's current fields: the offer phase, a price step-up's consent and the replaced product are on the event; a re-subscription from the Play subscriptions center keeps the expired purchase's user")
    func subscriptionFields() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        let expiry = Timestamp(millisecondsSince1970: nowMs + 30 * 86_400_000).rfc3339
        let start = Timestamp(millisecondsSince1970: nowMs - 60_000).rfc3339
        let subscription = #"""
        { "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US", "startTime": "\#(start)",
          "subscriptionState": "SUBSCRIPTION_STATE_ACTIVE", "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
          "outOfAppPurchaseContext": { "expiredPurchaseToken": "expired-token",
                                       "expiredExternalAccountIdentifiers": { "obfuscatedExternalAccountId": "user-old" } },
          "lineItems": [ { "productId": "premium_yearly", "expiryTime": "\#(expiry)", "latestSuccessfulOrderId": "GPA.3345-0000-0000-00002",
            "offerDetails": { "basePlanId": "yearly", "offerId": "intro-year" },
            "offerPhase": { "introductoryPrice": {} },
            "itemReplacement": { "productId": "premium_monthly", "basePlanId": "monthly", "replacementMode": "WITH_TIME_PRORATION" },
            "autoRenewingPlan": { "autoRenewEnabled": true, "recurringPrice": { "currencyCode": "USD", "units": "49", "nanos": 990000000 },
              "priceStepUpConsentDetails": { "state": "PENDING", "consentDeadlineTime": "\#(expiry)",
                                             "newPrice": { "currencyCode": "USD", "units": "59", "nanos": 990000000 } } } } ] }
        """#
        h.fake.store(subscription, at: PlayHarness.subscriptionPath("resubscribed"))
        let verifier = GooglePurchaseVerifier(client: h.client, packages: [PlayHarness.package], now: { nowMs })
        let purchase = try #require(try await verifier.verify(.google(packageName: PlayHarness.package, productId: "premium_yearly",
                                                                          purchaseToken: "resubscribed")).first)
        #expect(purchase.subscription?.offerPhase == "introductory")
        #expect(purchase.subscription?.priceConsent == "pending")
        #expect(purchase.subscription?.replacedProduct == "premium_monthly")
        #expect(purchase.transaction?.id == "GPA.3345-0000-0000-00002" && purchase.transaction?.offerId == "intro-year")
        #expect(purchase.owner == "user-old", "the expired purchase's user, named by the out-of-app context")
        let snapshot = GooglePlayEnricher.subscriptionSnapshot(try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: Data(subscription.utf8)),
                                                               nowMs: nowMs)
        #expect(snapshot.linkedPurchaseToken == "expired-token" && snapshot.user == "user-old")
        // The event as written on tollgate.events carries the fields, never a token.
        let event = PurchaseService.event(for: purchase, user: "user-old", stored: nil, receivedAt: Timestamp(millisecondsSince1970: nowMs))
        let json = String(decoding: EventCoding.encode(event), as: UTF8.self)
        #expect(json.contains(#""offerPhase":"introductory""#) && json.contains(#""priceConsent":"pending""#)
                && json.contains(#""replacedProduct":"premium_monthly""#))
        #expect(!json.contains("expired-token"))
    }
}
