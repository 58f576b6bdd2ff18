import Entitlements
import Events
import Foundation
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import Toolkit
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Antom's answers as someone between Tollgate and Antom could replay them (docs/checkouts.md): genuine,
/// signed with the platform key, so they verify, but older (or dated further ahead) than
/// `checkouts.antomAnswerWindowSeconds`, without a usable `Response-Time`, or the answer to another
/// request. Each is refused as an answer that does not verify is: no checkout is left, no refund is
/// taken as done or published, and the request id is kept for the retry.
@Suite("Checkouts: Antom's answers must be fresh and name the request sent")
struct AntomAnswerTests {
    /// A fake Antom, the fixture (with `checkouts.antomAnswerWindowSeconds` = `window` when given), a
    /// store and the checkout API counting into `metrics` and publishing into `published`.
    static func withAntom(window: Int? = nil, platformKeyVersion: Int? = nil,
                          _ body: (FakeAntom, CheckoutFixture, EntitlementStore, CheckoutAPI, RecordingMetrics, RecordingPublisher) async throws -> Void) async throws {
        let platform = await offPool { PrivateKey.generateRSA()! }
        let merchant = await offPool { PrivateKey.generateRSA()! }
        let merchantPublic = try #require(PublicKey.load(pemOrDER: Array((merchant.publicKeyPEM ?? "").utf8)))
        let antom = FakeAntom(merchantPublicKey: merchantPublic, platformKey: platform, clientId: CheckoutFixture.clientId)
        defer { antom.stop() }
        var fixture = try await CheckoutFixture.make(antomBaseURL: antom.baseURL, merchant: merchant, platform: platform)
        if let window { fixture.config.checkouts.antomAnswerWindowSeconds = window }
        if let platformKeyVersion { fixture.config.sources.alipayplus.clients[0].platformPublicKeys[0].keyVersion = platformKeyVersion }
        let metrics = RecordingMetrics()
        let published = RecordingPublisher()
        try await TestDatabases.withStore(.sqlite) { store in
            let api = try fixture.api(store: store, metrics: MerchantMetrics(factory: metrics), publisher: published)
            try await body(antom, fixture, store, api, metrics, published)
        }
    }

    static let body = CheckoutTests.body(app: CheckoutFixture.clientId, provider: "alipayplus")

    static func errors(_ metrics: RecordingMetrics, _ call: String, _ kind: String) -> Int64 {
        metrics.total("tollgate_antom_api_errors_total", ["call": call, "kind": kind])
    }

    @Test("a pay answer older or further ahead than the window, without Response-Time, with one that is no time, or naming another paymentRequestId: 503 and no checkout row; one within the window starts the payment")
    func payAnswersRefused() async throws {
        try await Self.withAntom { antom, _, store, api, metrics, _ in
            let refused: [(FakeAntom.AnswerTime, Bool, String)] = [
                (.shifted(seconds: -330), false, "response_time"), (.shifted(seconds: -86_400), false, "response_time"),
                (.shifted(seconds: 330), false, "response_time"), (.missing, false, "response_time"), (.unparsable, false, "response_time"),
                (.now, true, "wrong_request_id"),
            ]
            for (time, anotherRequest, kind) in refused {
                antom.set(time)
                antom.answerForAnotherRequest(anotherRequest)
                let before = Self.errors(metrics, "pay", kind)
                let answer = try await api.post(Self.body)
                #expect(answer.status == 503, "\(time) \(anotherRequest): \(answer.text)")
                #expect(answer.error == "payment_provider_unavailable", "\(time) \(anotherRequest)")
                #expect(answer.string("paymentUrl") == nil)
                #expect(try await store.checkoutCount() == 0, "\(time) \(anotherRequest)")
                #expect(Self.errors(metrics, "pay", kind) == before + 1, "\(time) \(anotherRequest)")
            }
            #expect(antom.seen.allSatisfy { $0.signatureVerified })

            // Within the window (Antom's clock a little behind), naming the request: the payment starts.
            antom.set(.shifted(seconds: -240))
            antom.answerForAnotherRequest(false)
            let started = try await api.post(Self.body)
            #expect(started.status == 201, "\(started.text)")
            let reference = try #require(started.string("reference"))
            #expect(started.string("paymentUrl") == FakeAntom.pageURL(reference))
        }
    }

    @Test("an answer signed under a keyVersion no platform key is configured for is refused as a bad signature, as a notification would be")
    func answerKeyVersion() async throws {
        // The fake signs its answers with keyVersion=1; the client's one platform key is bound to version 2.
        try await Self.withAntom(platformKeyVersion: 2) { _, _, store, api, metrics, _ async throws in
            #expect(try await api.post(Self.body).status == 503)
            #expect(Self.errors(metrics, "pay", "bad_signature") == 1)
            #expect(try await store.checkoutCount() == 0)
        }
        try await Self.withAntom(platformKeyVersion: 1) { _, _, _, api, _, _ async throws in
            #expect(try await api.post(Self.body).status == 201)
        }
    }

    @Test("the window is checkouts.antomAnswerWindowSeconds")
    func configuredWindow() async throws {
        try await Self.withAntom(window: 60) { antom, _, store, api, _, _ async throws in
            antom.set(.shifted(seconds: -120))
            #expect(try await api.post(Self.body).status == 503)
            #expect(try await store.checkoutCount() == 0)
            antom.set(.shifted(seconds: -30))
            #expect(try await api.post(Self.body).status == 201)
        }
        try await Self.withAntom(window: 900) { antom, _, _, api, _, _ async throws in
            antom.set(.shifted(seconds: -600))
            #expect(try await api.post(Self.body).status == 201)
        }
    }

    @Test("a refund answer naming another refundRequestId (S or U) or outside the window: 503, nothing published, the checkout paid with the same request id for the retry, which then succeeds")
    func refundAnswersRefused() async throws {
        try await Self.withAntom { antom, fixture, store, api, metrics, published in
            let created = try await api.post(Self.body)
            let id = try #require(created.string("id"))
            let reference = try #require(created.string("reference"))
            let matcher = CheckoutMatcher(records: api.service.records, providers: api.service.providers, metrics: MerchantMetrics(factory: metrics), logger: api.logger,
                                          now: { Timestamp.now.millisecondsSince1970 })
            let payment = try #require(try await fixture.antomNotification(reference: reference, amount: "1999").first)
            _ = try await matcher.project(payment, into: store)
            #expect(try await api.get(id).string("state") == "paid")

            var sent: String?
            let cases: [(FakeAntom.RefundMode, FakeAntom.AnswerTime, Bool, String)] = [
                // U first: Antom gives a final (S) answer again to the same request, so it would hide U.
                (.inProcess, .now, true, "wrong_request_id"), (.succeed, .now, true, "wrong_request_id"),
                (.succeed, .shifted(seconds: -3_600), false, "response_time"), (.succeed, .missing, false, "response_time"),
            ]
            for (mode, time, anotherRequest, kind) in cases {
                antom.set(mode)
                antom.set(time)
                antom.answerForAnotherRequest(anotherRequest)
                let before = Self.errors(metrics, "refund", kind)
                let asked = try await api.askRefund(id)
                #expect(asked.status == 503 && asked.error == "payment_provider_unavailable", "\(mode) \(time): \(asked.text)")
                #expect(Self.errors(metrics, "refund", kind) == before + 1, "\(mode) \(time)")
                let checkout = try await api.get(id)
                #expect(checkout.string("state") == "paid")
                let requestId = try #require(checkout.string("refundRequestId"))
                #expect(sent == nil || sent == requestId, "a retry sends the same refundRequestId")
                sent = requestId
                #expect(published.events.withLock { $0.isEmpty }, "\(mode) \(time)")
            }
            #expect(metrics.total("tollgate_checkout_refunds_total", ["outcome": "refunded"]) == 0)

            antom.set(FakeAntom.RefundMode.succeed)
            antom.set(.now)
            antom.answerForAnotherRequest(false)
            let done = try await api.askRefund(id)
            #expect(done.status == 202, "\(done.text)")
            #expect(antom.seen.last?.body?["refundRequestId"]?.string == sent)
            let event = try #require(published.events.withLock { $0.first })
            #expect(event.type == .purchaseRefunded && event.subject == sent)
            #expect(try await store.checkoutCount() == 1)
        }
    }
}
