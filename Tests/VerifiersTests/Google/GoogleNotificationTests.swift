import Events
import Foundation
import Rejections
import TestSupport
import Testing
@testable import Verifiers

/// Envelopes, RTDN decoding and normalization of authenticated pushes.
@Suite("Google: Pub/Sub envelopes and RTDN normalization")
struct GoogleNotificationTests {
    static let subscriptionCases: [(Int, EventType, String)] = [
        (1, .subscriptionRecovered, "SUBSCRIPTION_RECOVERED(1)"), (2, .subscriptionRenewed, "SUBSCRIPTION_RENEWED(2)"),
        (3, .subscriptionAutoRenewDisabled, "SUBSCRIPTION_CANCELED(3)"), (4, .subscriptionStarted, "SUBSCRIPTION_PURCHASED(4)"),
        (5, .subscriptionOnHold, "SUBSCRIPTION_ON_HOLD(5)"), (6, .subscriptionBillingIssue, "SUBSCRIPTION_IN_GRACE_PERIOD(6)"),
        (7, .subscriptionAutoRenewEnabled, "SUBSCRIPTION_RESTARTED(7)"),
        (8, .subscriptionPriceChange, "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED(8)"),
        (9, .subscriptionExtended, "SUBSCRIPTION_DEFERRED(9)"), (10, .subscriptionPaused, "SUBSCRIPTION_PAUSED(10)"),
        (11, .subscriptionPauseScheduled, "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED(11)"),
        (12, .subscriptionRevoked, "SUBSCRIPTION_REVOKED(12)"), (13, .subscriptionExpired, "SUBSCRIPTION_EXPIRED(13)"),
        (17, .subscriptionPlanChanged, "SUBSCRIPTION_ITEMS_CHANGED(17)"),
        (18, .subscriptionAutoRenewDisabled, "SUBSCRIPTION_CANCELLATION_SCHEDULED(18)"),
        (19, .subscriptionPriceChange, "SUBSCRIPTION_PRICE_CHANGE_UPDATED(19)"),
        (20, .subscriptionPendingCanceled, "SUBSCRIPTION_PENDING_PURCHASE_CANCELED(20)"),
        (22, .subscriptionPriceChange, "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED(22)"),
        (14, .storeOther, "SUBSCRIPTION_UNKNOWN(14)"), (99, .storeOther, "SUBSCRIPTION_UNKNOWN(99)"),
    ]

    static func event(_ request: WebhookRequest, source: GoogleSource) async throws -> NormalizedEvent {
        let delivery = try await source.delivery(request)
        #expect(delivery.quarantine == nil)
        #expect(delivery.events.count == 1)
        return try #require(delivery.events.first)
    }

    @Test("every subscription notification type, wrapped and unwrapped, maps per the vocabulary")
    func subscriptionTypes() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        for (code, type, sourceType) in Self.subscriptionCases {
            let rtdn = GoogleFixtures.rtdn(GoogleFixtures.subscription(code))
            for request in [GoogleFixtures.request(GoogleFixtures.wrapped(rtdn), token: f.token()),
                            GoogleFixtures.unwrapped(rtdn, token: f.token(), messageId: "2070443601311540")] {
                let event = try await Self.event(request, source: source)
                #expect(event.type == type, "\(code)")
                #expect(event.sourceType == sourceType)
                #expect(event.id == "google:projects/my-project/subscriptions/rtdn-push:2070443601311540")
                #expect(event.subject == "purchase-token-1")
                #expect(event.source == "/google/com.some.thing")
                #expect(event.app == "com.some.thing")
                #expect(event.product == "monthly")
                #expect(event.occurredAt == "2025-11-21T11:59:00.000Z")
                #expect(event.receivedAt == GoogleFixtures.now.rfc3339)
                #expect(event.environment == .production)
                // RTDNs carry no state: the workers ask the Play Developer API.
                #expect(event.transaction == nil && event.price == nil && event.subscription == nil && event.user == nil)
            }
        }
    }

    @Test("one-time product, voided purchase and test notifications")
    func otherKinds() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        let purchased = try await Self.event(GoogleFixtures.request(GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.oneTime(1))), token: f.token()), source: source)
        #expect(purchased.type == .purchaseCompleted)
        #expect(purchased.sourceType == "ONE_TIME_PRODUCT_PURCHASED(1)")
        #expect(purchased.subject == "purchase-token-2")
        #expect(purchased.product == "coins.100")
        let canceled = try await Self.event(GoogleFixtures.unwrapped(GoogleFixtures.rtdn(GoogleFixtures.oneTime(2)), token: f.token()), source: source)
        #expect(canceled.type == .purchaseCanceled)
        #expect(canceled.id == "google:projects/my-project/subscriptions/rtdn-push:136969346945")
        let unknown = try await Self.event(GoogleFixtures.unwrapped(GoogleFixtures.rtdn(GoogleFixtures.oneTime(7)), token: f.token()), source: source)
        #expect(unknown.type == .storeOther)
        #expect(unknown.sourceType == "ONE_TIME_PRODUCT_UNKNOWN(7)")

        for request in [GoogleFixtures.request(GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.voided)), token: f.token()),
                        GoogleFixtures.unwrapped(GoogleFixtures.rtdn(GoogleFixtures.voided), token: f.token())] {
            let voided = try await Self.event(request, source: source)
            #expect(voided.type == .purchaseRefunded)
            #expect(voided.sourceType == "VOIDED_PURCHASE")
            #expect(voided.subject == "purchase-token-3")
            #expect(voided.transaction?.id == "GPA.1234-5678-9012-34567")
            #expect(voided.reason == "full_refund")
        }

        for request in [GoogleFixtures.request(GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.test), messageId: "m-test"), token: f.token()),
                        GoogleFixtures.unwrapped(GoogleFixtures.rtdn(GoogleFixtures.test), token: f.token(), messageId: "m-test")] {
            let test = try await Self.event(request, source: source)
            #expect(test.type == .storeTest)
            #expect(test.sourceType == "TEST_NOTIFICATION")
            #expect(test.subject == "notification:m-test")
        }

        // A kind Google adds later is kept, not dropped.
        let future = GoogleFixtures.rtdn(#""subscriptionTransferNotification":{"purchaseToken":"purchase-token-4"}"#)
        let other = try await Self.event(GoogleFixtures.unwrapped(future, token: f.token()), source: source)
        #expect(other.type == .storeOther)
        #expect(other.sourceType == "subscriptionTransferNotification")
        #expect(other.subject == "purchase-token-4")
    }

    @Test("a pending refund review: its own type, keyed by the order, the pending refund token to answer with, 24 hours from arrival")
    func pendingRefundReview() async throws {
        let f = await GoogleFixtures.shared()
        let review = GoogleFixtures.rtdn(#""pendingRefundReviewNotification":{"version":"1.0","pendingRefundToken":"prt-4711","orderId":"GPA.3312-1111-2222-33333","refundReason":7,"obfuscatedAccountId":"user-77","obfuscatedProfileId":"profile-9"}"#)
        let event = try await Self.event(GoogleFixtures.unwrapped(review, token: f.token()), source: f.source())
        #expect(event.type == .purchaseRefundReviewRequested && event.sourceType == "PENDING_REFUND_REVIEW")
        #expect(event.subject == "order:GPA.3312-1111-2222-33333" && event.transaction?.id == "GPA.3312-1111-2222-33333")
        #expect(event.reason == "chargeback" && event.user == "user-77")
        #expect(event.refundReview == NormalizedEvent.RefundReview(
            pendingRefundToken: "prt-4711",
            respondBy: Timestamp(millisecondsSince1970: GoogleFixtures.now.millisecondsSince1970 + 86_400_000).rfc3339))
        #expect(!event.type.concernsPurchases)
        // Without the token or the order there is nothing to answer: not an RTDN (quarantined, not dropped).
        let broken = GoogleFixtures.rtdn(#""pendingRefundReviewNotification":{"version":"1.0","orderId":"GPA.3312-1111-2222-33333"}"#)
        let quarantined = try await f.source().delivery(GoogleFixtures.unwrapped(broken, token: f.token()))
        #expect(quarantined.quarantine != nil && quarantined.events.isEmpty)
    }

    @Test("eventTimeMillis and notificationType as numbers or strings; subscriptionId optional")
    func numberForms() async throws {
        let f = await GoogleFixtures.shared()
        let numeric = GoogleFixtures.rtdn(#""subscriptionNotification":{"version":"1.0","notificationType":"2","purchaseToken":"t"}"#,
                                          eventTime: "1763726340000")
        let event = try await Self.event(GoogleFixtures.unwrapped(numeric, token: f.token()), source: f.source())
        #expect(event.type == .subscriptionRenewed)
        #expect(event.occurredAt == "2025-11-21T11:59:00.000Z")
        #expect(event.product == nil)
    }

    @Test("a redelivery with the same messageId gives the same ce_id")
    func redelivery() async throws {
        let f = await GoogleFixtures.shared()
        let body = GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.subscription(2)), messageId: "777")
        let first = try await Self.event(GoogleFixtures.request(body, token: f.token()), source: f.source())
        let later = Timestamp(millisecondsSince1970: GoogleFixtures.now.millisecondsSince1970 + 600_000)
        let token = f.token(claims: GoogleFixtures.claims(iat: later.millisecondsSince1970 / 1000, exp: later.millisecondsSince1970 / 1000 + 3_600))
        let second = try await Self.event(GoogleFixtures.request(body, token: token, now: later), source: f.source())
        #expect(first.id == "google:projects/my-project/subscriptions/rtdn-push:777")
        #expect(second.id == first.id)
    }

    @Test("an unconfigured packageName is 403 unknown_package")
    func unknownPackage() async throws {
        let f = await GoogleFixtures.shared()
        let rtdn = GoogleFixtures.rtdn(GoogleFixtures.subscription(4), packageName: "com.other.app")
        #expect(await f.source().reason(GoogleFixtures.request(GoogleFixtures.wrapped(rtdn), token: f.token())) == .unknownPackage)
        #expect(await f.source().reason(GoogleFixtures.unwrapped(GoogleFixtures.rtdn(GoogleFixtures.test, packageName: "com.other.app"), token: f.token())) == .unknownPackage)
        #expect(WebhookReason.unknownPackage.httpStatus == 403)
    }

    @Test("malformed envelopes are 400")
    func malformedEnvelopes() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        let cases: [(String, CommonReason)] = [
            ("not json", .malformedJSON),
            ("[]", .malformedJSON),
            (#"{"subscription":"projects/p/subscriptions/s"}"#, .missingField),
            (#"{"message":"hello"}"#, .invalidField),
            (#"{"message":{"data":"e30="}}"#, .missingField),
            (#"{"message":{"data":"e30=","messageId":""}}"#, .invalidField),
            (#"{"message":{"data":"e30=","messageId":"1","message_id":"2"}}"#, .invalidField),
            (#"{"message":{"data":"not base64!","messageId":"1"}}"#, .invalidField),
            (#"{"message":{"data":42,"messageId":"1"}}"#, .invalidField),
            (#"{"message":{"data":"e30=","messageId":"1","attributes":{"k":1}}}"#, .invalidField),
            (#"{"message":{"data":"e30=","messageId":1}}"#, .invalidField),
            // The subscription scopes the event id: Pub/Sub names it in every push.
            (#"{"message":{"data":"e30=","messageId":"1"}}"#, .missingField),
            (#"{"message":{"data":"e30=","messageId":"1"},"subscription":""}"#, .invalidField),
            (#"{"message":{"data":"e30=","messageId":"1"},"subscription":7}"#, .invalidField),
            // Only Pub/Sub's form: nothing longer or stranger goes into an event id.
            (#"{"message":{"data":"e30=","messageId":"1"},"subscription":"s"}"#, .invalidField),
            (#"{"message":{"data":"e30=","messageId":"1"},"subscription":"projects/p/subscriptions/a\u000Ab"}"#, .invalidField),
            (#"{"message":{"data":"e30=","messageId":"1"},"subscription":"projects/p/subscriptions/\#(String(repeating: "x", count: 256))"}"#, .invalidField),
            (#"{"message":{"data":"e30=","messageId":"1"},"subscription":"projects/p/topics/t"}"#, .invalidField),
        ]
        for (body, expected) in cases {
            let rejection = await source.rejection(GoogleFixtures.request(body, token: f.token()))
            #expect(rejection?.reason == expected, "\(body): \(rejection?.description ?? "accepted")")
            #expect(rejection?.reason.httpStatus == 400)
        }
        // A specific content type that is not JSON is refused before anything else.
        let xml = GoogleFixtures.request(GoogleFixtures.wrapped("x"), token: f.token(), headers: [("Content-Type", "text/xml")])
        #expect(await source.reason(xml) == .unsupportedMediaType)
    }

    @Test("authentic pushes whose data is not an RTDN are acknowledged and quarantined with a reason")
    func quarantine() async throws {
        let f = await GoogleFixtures.shared()
        let source = f.source()
        let cases: [(WebhookRequest, String)] = [
            (GoogleFixtures.request(GoogleFixtures.wrapped("Hello Cloud Pub/Sub! Here is my message!"), token: f.token()), "data_not_json"),
            (GoogleFixtures.request(GoogleFixtures.wrapped(nil), token: f.token()), "missing_data"),
            (GoogleFixtures.request(GoogleFixtures.wrapped(""), token: f.token()), "data_not_json"),
            (GoogleFixtures.request(GoogleFixtures.wrapped(#"{"version":"1.0"}"#), token: f.token()), "not_an_rtdn"),
            (GoogleFixtures.request(GoogleFixtures.wrapped(GoogleFixtures.rtdn(#""other":1"#)), token: f.token()), "not_an_rtdn"),
            (GoogleFixtures.request(GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.test + "," + GoogleFixtures.oneTime(1))), token: f.token()), "not_an_rtdn"),
            (GoogleFixtures.request(GoogleFixtures.wrapped(GoogleFixtures.rtdn(#""subscriptionNotification":{"notificationType":4}"#)), token: f.token()), "not_an_rtdn"),
            (GoogleFixtures.request(GoogleFixtures.wrapped(GoogleFixtures.rtdn(GoogleFixtures.subscription(4), eventTime: "true")), token: f.token()), "not_an_rtdn"),
            (GoogleFixtures.unwrapped("plain text", token: f.token()), "data_not_json"),
        ]
        for (request, reason) in cases {
            let delivery = try await source.delivery(request)
            #expect(delivery.events.isEmpty)
            #expect(delivery.quarantine?.reason == reason, "\(String(decoding: request.body, as: UTF8.self))")
            #expect(delivery.response.status == 200)
            #expect(!delivery.rawKey.isEmpty)
        }
        // Quarantine is only for authentic pushes.
        #expect(await source.reason(GoogleFixtures.request(GoogleFixtures.wrapped("hello"), token: nil)) == .missingAuthorization)
    }
}
