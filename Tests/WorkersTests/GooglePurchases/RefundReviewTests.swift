import Config
import Entitlements
import Events
import Foundation
import Store
import StoreTestSupport
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Google's chargeback reviews (`pendingRefundReviewNotification`) answered with `orders.reviewrefund`
/// within Google's 24 hours, against a local Google answering as its reference shows.
@Suite("Google refund reviews")
struct RefundReviewTests {
    static let policy = GoogleSettings.RefundReviewPolicy(package: PlayHarness.package, refundPreference: .decline, sampleContentProvided: true)
    static let day: Int64 = 86_400_000

    /// The review as the gateway publishes it: the order, the token to answer with, arrived at `receivedMs`.
    static func review(orderId: String, token: String = "prt-1", receivedMs: Int64) -> NormalizedEvent {
        var event = NormalizedEvent(
            id: "google:projects/p/subscriptions/rtdn:\(orderId)", type: .purchaseRefundReviewRequested, source: "/google/\(PlayHarness.package)",
            environment: .production, app: PlayHarness.package, subject: "order:\(orderId)",
            occurredAt: Timestamp(millisecondsSince1970: receivedMs - 1_000).rfc3339, receivedAt: Timestamp(millisecondsSince1970: receivedMs).rfc3339,
            transaction: .init(id: orderId), reason: "chargeback", sourceType: "PENDING_REFUND_REVIEW")
        event.refundReview = .init(pendingRefundToken: token, respondBy: Timestamp(millisecondsSince1970: receivedMs + day).rfc3339)
        return event
    }

    /// `orders.get` for an order of `purchaseToken`, a subscription's paid period from `startMs` to `endMs`.
    static func order(_ orderId: String, purchaseToken: String, startMs: Int64, endMs: Int64) -> String {
        #"""
        { "orderId": "\#(orderId)", "purchaseToken": "\#(purchaseToken)", "state": "PROCESSED", "createTime": "\#(Timestamp(millisecondsSince1970: startMs).rfc3339)",
          "lineItems": [ { "productId": "premium_monthly", "productTitle": "Premium",
            "subscriptionDetails": { "basePlanId": "monthly", "offerPhase": "BASE", "servicePeriodStartTime": "\#(Timestamp(millisecondsSince1970: startMs).rfc3339)",
                                     "servicePeriodEndTime": "\#(Timestamp(millisecondsSince1970: endMs).rfc3339)" } } ],
          "total": { "currencyCode": "USD", "units": "9", "nanos": 990000000 } }
        """#
    }

    static func orderPath(_ orderId: String) -> String { "/androidpublisher/v3/applications/\(PlayHarness.package)/orders/\(orderId)" }

    @Test("a review is answered through the workers: the policy's preference and sample, the share of the paid period used; an undelivered purchase is approved; a repeat is answered once",
          arguments: Backend.allCases)
    func answered(backend: Backend) async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let nowMs = Timestamp.now.millisecondsSince1970
        // Ten days into a thirty-day period when the customer disputed it: a third used.
        h.fake.store(Self.order("GPA.3312-0000-0000-00010", purchaseToken: "held-token", startMs: nowMs - 10 * Self.day, endMs: nowMs + 20 * Self.day),
                     at: Self.orderPath("GPA.3312-0000-0000-00010"))
        h.fake.store(Self.order("GPA.3312-0000-0000-00020", purchaseToken: "never-granted", startMs: nowMs - Self.day, endMs: nowMs + 29 * Self.day),
                     at: Self.orderPath("GPA.3312-0000-0000-00020"))
        try await TestDatabases.withStore(backend) { store async throws in
            // The store here: one purchase granted to its user, one never granted (pending, no user).
            let held = PurchaseKey(source: "google", app: PlayHarness.package, environment: "production", subject: "held-token")
            let pending = PurchaseKey(source: "google", app: PlayHarness.package, environment: "production", subject: "never-granted")
            _ = try await store.apply([
                PurchaseChange(eventId: "seed-1", key: held) { _ in
                    Purchase(key: held, kind: .subscription, state: .active, user: "user-r", product: "premium_monthly",
                             expiresAtMs: nowMs + 20 * Self.day, lastEventAtMs: nowMs - Self.day, lastEventId: "seed-1", lastEventType: "subscription.renewed")
                },
                PurchaseChange(eventId: "seed-2", key: pending) { _ in
                    Purchase(key: pending, kind: .subscription, state: .pending, lastEventAtMs: nowMs - Self.day, lastEventId: "seed-2",
                             lastEventType: "subscription.updated")
                },
            ], nowMs: nowMs)
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, playAPI: GooglePlayEnricher(client: h.client),
                                              refundReviews: RefundReviewSetup(policies: [Self.policy], retryDelaysMs: [100, 200])) { workers async throws in
                    let first = Self.review(orderId: "GPA.3312-0000-0000-00010", token: "prt-held", receivedMs: nowMs)
                    try await harness.publish(first)
                    try await harness.publish(first)
                    try await harness.publish(Self.review(orderId: "GPA.3312-0000-0000-00020", token: "prt-pending", receivedMs: nowMs))
                    try await waitUntil("both reviews answered") { h.fake.reviewRefunds.count >= 2 }
                    try await waitUntil("both counted") { workers.metrics.total("tollgate_refund_reviews_total", ["outcome": "answered"]) == 2 }
                    let answers = Dictionary(uniqueKeysWithValues: h.fake.reviewRefunds.map { ($0.order, JSONValue.parse(Array($0.body.utf8))) })
                    let declined = try #require(answers[Self.orderPath("GPA.3312-0000-0000-00010")] ?? nil)
                    #expect(declined["pendingRefundToken"]?.string == "prt-held" && declined["refundPreference"]?.string == "DECLINE")
                    #expect(declined["sampleContentProvided"]?.bool == true)
                    #expect(declined["consumptionPercentageMilliunits"]?.int64 == 33_333)
                    let approved = try #require(answers[Self.orderPath("GPA.3312-0000-0000-00020")] ?? nil)
                    #expect(approved["refundPreference"]?.string == "APPROVE", "a purchase never granted is not fought")
                    #expect(h.fake.reviewRefunds.count == 2, "the repeated notification is answered once")
                    #expect(try await RefundReviewRows.backlog(store).count == 0)
                }
            }
        }
    }

    @Test("a review Google keeps failing is retried on the tiers and, left to its deadline, counted expired; the oldest's age is reported for the alert")
    func leftToItsDeadline() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let clock = TestClock()
        let startMs = Int64((clock.now.timeIntervalSince1970 * 1000).rounded())
        h.fake.store(Self.order("GPA.3312-0000-0000-00030", purchaseToken: "t-30", startMs: startMs - Self.day, endMs: startMs + Self.day),
                     at: Self.orderPath("GPA.3312-0000-0000-00030"))
        let unavailable = FakeGooglePlay.Scripted.reply(.json(503, #"{"error": {"code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE"}}"#))
        h.fake.script(Self.orderPath("GPA.3312-0000-0000-00030") + ":reviewrefund", unavailable, unavailable, unavailable, unavailable)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            let metrics = RecordingMetrics()
            let answerer = RefundReviewAnswerer(policies: [Self.policy], client: h.client, store: store, retryDelaysMs: [5_000, 60_000, 600_000],
                                                metrics: MerchantMetrics(factory: metrics), logger: ApplePurchases.logger, now: { Int64((clock.now.timeIntervalSince1970 * 1000).rounded()) })
            let step = try #require(answerer.step(for: Self.review(orderId: "GPA.3312-0000-0000-00030", receivedMs: startMs)))
            _ = try await store.database.transaction { connection throws(StoreError) in try step.apply(eventId: "e", nowMs: startMs, on: connection) }
            // The same order's review again, under another message id, while the first waits: one per order.
            var again = Self.review(orderId: "GPA.3312-0000-0000-00030", receivedMs: startMs)
            again.id += ":again"
            let second = try #require(answerer.step(for: again))
            _ = try await store.database.transaction { connection throws(StoreError) in try second.apply(eventId: "e2", nowMs: startMs, on: connection) }
            #expect(try await RefundReviewRows.backlog(store).count == 1)

            // Each failure waits the next tier: 5 s, a minute, ten minutes.
            for delay: Int64 in [5_000, 60_000, 600_000] {
                #expect(try await answerer.answerDue() == .idle)
                let due = try #require(try await RefundReviewRows.claimDue(store, nowMs: Int64.max - 1, claimUntilMs: 0, limit: 1).first)
                #expect(due.nextAttemptAtMs == Int64((clock.now.timeIntervalSince1970 * 1000).rounded()) + delay, "attempt \(due.attempts)")
                // Put the claim back as it was, then move to when it is due.
                try await RefundReviewRows.reschedule(store, eventId: due.eventId, attempts: due.attempts, nextAttemptAtMs: due.nextAttemptAtMs, lastError: "")
                clock.advance(seconds: TimeInterval(delay) / 1000)
            }
            #expect(metrics.total("tollgate_refund_reviews_total") == 0)
            // Twenty hours on, still unanswered: the age the alert watches.
            clock.advance(seconds: 20 * 3_600)
            _ = try await answerer.answerDue()
            #expect(metrics.gauge("tollgate_refund_review_oldest_age_seconds")?.last ?? 0 >= 20 * 3_600)
            // Past the 24 hours: dropped as expired, never sent late.
            clock.advance(seconds: 4 * 3_600)
            _ = try await answerer.answerDue()
            #expect(metrics.total("tollgate_refund_reviews_total", ["outcome": "expired"]) == 1)
            #expect(try await RefundReviewRows.backlog(store).count == 0)
            #expect(h.fake.reviewRefunds.isEmpty)
        }
    }

    @Test("a package without a policy sends nothing; a review past its 24 hours when the projection meets it is not queued")
    func notQueued() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            let nowMs = Timestamp.now.millisecondsSince1970
            let none = RefundReviewAnswerer(policies: [], client: h.client, store: store, retryDelaysMs: [5_000],
                                            metrics: MerchantMetrics(factory: RecordingMetrics()), logger: ApplePurchases.logger, now: { nowMs })
            #expect(none.step(for: Self.review(orderId: "o-1", receivedMs: nowMs)) is ConsumptionAnswerer.Counted)
            let answerer = RefundReviewAnswerer(policies: [Self.policy], client: h.client, store: store, retryDelaysMs: [5_000],
                                                metrics: MerchantMetrics(factory: RecordingMetrics()), logger: ApplePurchases.logger, now: { nowMs })
            #expect(answerer.step(for: Self.review(orderId: "o-2", receivedMs: nowMs - Self.day - 1)) is ConsumptionAnswerer.Counted)
            #expect(answerer.step(for: Self.review(orderId: "o-3", receivedMs: nowMs)) is RefundReviewAnswerer.Queued)
            var other = Self.review(orderId: "o-4", receivedMs: nowMs)
            other.type = .purchaseRefunded
            #expect(answerer.step(for: other) == nil)
        }
    }
}
