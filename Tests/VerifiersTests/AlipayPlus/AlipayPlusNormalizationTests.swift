import Events
import Rejections
import TestSupport
import Testing
@testable import Verifiers

@Suite("Alipay+ / Antom normalization")
struct AlipayPlusNormalizationTests {
    typealias F = AlipayPlusFixtures

    func event(_ body: String) async throws -> NormalizedEvent {
        try #require(try await F.source.handle(F.request(body)).events.first)
    }

    @Test("an Antom payment result: completed, subject paymentRequestId, amount in micros, sandbox client")
    func antom() async throws {
        let event = try await event(F.antomBody)
        #expect(event.type == .purchaseCompleted)
        #expect(event.subject == "order-2026-11")
        #expect(event.source == "/alipayplus/\(F.clientId)")
        #expect(event.environment == .sandbox)
        #expect(event.price == NormalizedEvent.Price(amountMicros: 19_990_000, currency: "USD"))
        #expect(event.occurredAt == "2026-11-21T03:59:58.000Z")
        #expect(event.transaction == NormalizedEvent.Transaction(id: "20261121194010800100188820200000001",
                                                                  purchasedAt: "2026-11-21T03:59:30.000Z"))
        #expect(event.sourceType == "PAYMENT_RESULT/S")
    }

    @Test("the Alipay+ acquirer variant: paymentResult, customerId as user, failure reason, zero-decimal JPY")
    func acquirer() async throws {
        let event = try await event(F.acquirerBody)
        #expect(event.id == "alipayplus:\(F.clientId):2026112100000077:PAYMENT_RESULT:F")
        #expect(event.type == .purchaseFailed)
        #expect(event.user == "cust-5")
        #expect(event.reason == "user_balance_not_enough")
        #expect(event.price == NormalizedEvent.Price(amountMicros: 500_000_000, currency: "JPY"))
        #expect(event.occurredAt == "2026-11-21T03:00:00.000Z")
    }

    @Test("Alipay+'s participant shape (paymentResult, no notifyType) gives the event Antom's shape gives for the same payment")
    func participantSuccess() async throws {
        let participant = try await event(F.issuerBody)
        let merchant = try await event(F.antomBody)
        #expect(participant.id == "alipayplus:\(F.clientId):20261121194010800100188820200000001:PAYMENT_RESULT:S")
        #expect(participant.id == merchant.id)
        #expect(participant.type == .purchaseCompleted)
        #expect(participant.sourceType == merchant.sourceType)
        #expect(participant.subject == merchant.subject)
        #expect(participant.transaction == merchant.transaction)
        #expect(participant.price == merchant.price)
        #expect(participant.occurredAt == merchant.occurredAt)
        #expect(participant.user == "mpp-user-3")
    }

    @Test("a participant failure without paymentId: purchase.failed, the request id in the id, the result code as reason")
    func participantFailure() async throws {
        let event = try await event(F.acquirerFailureBody)
        #expect(event.id == "alipayplus:\(F.clientId):request=acq-order-9:PAYMENT_RESULT:F")
        #expect(event.type == .purchaseFailed)
        #expect(event.reason == "payment_fail")
        #expect(event.subject == "acq-order-9")
        #expect(event.transaction == nil || event.transaction?.id == nil)
        #expect(event.price == NormalizedEvent.Price(amountMicros: 800_000_000, currency: "KRW"))
        #expect(event.sourceType == "PAYMENT_RESULT/F")
    }

    @Test("Antom's notifyRefund: purchase.refunded, subject the merchant's refundRequestId, Antom's refundId in the scoped id, the refunded amount, refundTime")
    func refund() async throws {
        let event = try await event(F.refundBody)
        #expect(event.id == "alipayplus:\(F.clientId):20261121194010800100188820200000077:REFUND_RESULT:SUCCESS")
        #expect(event.type == .purchaseRefunded)
        #expect(event.isAlipayPlusRefundResult)
        #expect(event.subject == "rf-order-2026-11")
        #expect(event.app == F.clientId && event.source == "/alipayplus/\(F.clientId)" && event.environment == .sandbox)
        #expect(event.transaction == NormalizedEvent.Transaction(id: "20261121194010800100188820200000077"))
        #expect(event.price == NormalizedEvent.Price(amountMicros: 19_990_000, currency: "USD"))
        #expect(event.occurredAt == "2026-11-21T04:10:00.000Z")
        #expect(event.user == nil && event.reason == nil)
        #expect(event.sourceType == "REFUND_RESULT/SUCCESS")
    }

    @Test("a failed refund: purchase.refund_declined with Antom's result code as reason, at arrival time; payments are no refund results")
    func refundFailure() async throws {
        let event = try await event(F.refundFailureBody)
        #expect(event.id == "alipayplus:\(F.clientId):20261121194010800100188820200000078:REFUND_RESULT:FAIL")
        #expect(event.type == .purchaseRefundDeclined)
        #expect(event.reason == "refund_window_exceed")
        #expect(event.occurredAt == F.receivedAt.rfc3339)
        #expect(event.sourceType == "REFUND_RESULT/FAIL")
        #expect(try await self.event(F.antomBody).isAlipayPlusRefundResult == false)
    }

    @Test("Antom's notifyDispute judged against the merchant is a chargeback of the payment its paymentRequestId names; its other stages are store.other")
    func dispute() async throws {
        let judged = try await event(F.disputeJudgedBody)
        #expect(judged.id == "alipayplus:\(F.clientId):2026112519401080010018880000001:DISPUTE_JUDGED/ACCEPT_BY_MERCHANT")
        #expect(judged.type == .purchaseChargeback)
        #expect(judged.subject == "order-2026-11" && !judged.isAlipayPlusRefundResult)
        #expect(judged.transaction == NormalizedEvent.Transaction(id: "20261121194010800100188820200000001"))
        #expect(judged.price == NormalizedEvent.Price(amountMicros: 19_990_000, currency: "USD"))
        #expect(judged.occurredAt == "2026-11-26T02:00:00.000Z")
        #expect(judged.reason == "4853")
        #expect(judged.sourceType == "DISPUTE_JUDGED/ACCEPT_BY_MERCHANT")
        let created = try await event(F.disputeCreatedBody)
        #expect(created.id == "alipayplus:\(F.clientId):2026112519401080010018880000001:DISPUTE_CREATED")
        #expect(created.type == .storeOther && created.reason == nil)
        #expect(created.occurredAt == "2026-11-25T02:00:00.000Z")
        let forCustomer = try await event(F.disputeJudgedBody.replacingOccurrences(of: "ACCEPT_BY_MERCHANT", with: "ACCEPT_BY_CUSTOMER"))
        #expect(forCustomer.type == .storeOther && forCustomer.sourceType == "DISPUTE_JUDGED/ACCEPT_BY_CUSTOMER")
        #expect(await F.source.reason(F.request(#"{"disputeNotificationType":"DISPUTE_CREATED","disputeId":"d","paymentId":"p"}"#)) == .missingField)
        #expect(await F.source.reason(F.request(#"{"disputeNotificationType":"DISPUTE_CREATED","paymentRequestId":"o","paymentId":"p"}"#)) == .missingField)
    }

    @Test("notifyRefund needs its fields", arguments: [
        (#"{"notifyType":"REFUND_RESULT","refundStatus":"SUCCESS","refundRequestId":"r","refundId":"i"}"#, CommonReason.missingField),
        (#"{"notifyType":"REFUND_RESULT","result":{"resultStatus":"S"},"refundRequestId":"r","refundId":"i"}"#, .missingField),
        (#"{"notifyType":"REFUND_RESULT","result":{"resultStatus":"S"},"refundStatus":"SUCCESS","refundId":"i"}"#, .missingField),
        (#"{"notifyType":"REFUND_RESULT","result":{"resultStatus":"S"},"refundStatus":"SUCCESS","refundRequestId":"r"}"#, .missingField),
        (#"{"notifyType":"REFUND_RESULT","result":{"resultStatus":"S"},"refundStatus":"SUCCESS","refundRequestId":"","refundId":"i"}"#, .invalidField),
        (#"{"notifyType":"REFUND_RESULT","result":{"resultStatus":"S"},"refundStatus":"SUCCESS","refundRequestId":"r","refundId":"i","refundTime":"9999-12-31T23:59:59-00:01"}"#, .invalidField),
    ])
    func refundShapes(body: String, expected: CommonReason) async {
        #expect(await F.source.reason(F.request(body)) == expected, "\(body)")
    }

    @Test("either shape needs its own fields: missing or mistyped ones are refused", arguments: [
        (#"{"paymentRequestId":"o-1","paymentId":"p-1"}"#, CommonReason.missingField),
        (#"{"paymentResult":"S","paymentRequestId":"o-1"}"#, .invalidField),
        (#"{"paymentResult":{"resultCode":"SUCCESS"},"paymentRequestId":"o-1"}"#, .missingField),
        (#"{"paymentResult":{"resultStatus":"S"}}"#, .missingField),
        (#"{"paymentResult":{"resultStatus":"S"},"paymentRequestId":"o-1","paymentId":""}"#, .invalidField),
        (#"{"result":{"resultStatus":"S"},"paymentRequestId":"o-1","paymentId":"p-1"}"#, .missingField),
        (#"{"notifyType":"PAYMENT_RESULT","result":{"resultStatus":"S"},"paymentRequestId":"o-1"}"#, .missingField),
    ])
    func shapes(body: String, expected: CommonReason) async {
        #expect(await F.source.reason(F.request(body)) == expected, "\(body)")
    }

    @Test("scalars may arrive as numbers or strings")
    func numbersAsText() async throws {
        let body = #"{"notifyType":"PAYMENT_PENDING","result":{"resultStatus":"U"},"paymentRequestId":12345,"paymentId":987,"paymentAmount":{"currency":"KRW","value":1000}}"#
        let event = try await event(body)
        #expect(event.id == "alipayplus:\(F.clientId):987:PAYMENT_PENDING:U")
        #expect(event.subject == "12345")
        #expect(event.type == .purchasePending)
        #expect(event.price == NormalizedEvent.Price(amountMicros: 1_000_000_000, currency: "KRW"))
        #expect(event.occurredAt == "2026-11-21T04:00:01.000Z")
    }

    @Test("notifyType and resultStatus map to the vocabulary", arguments: [
        ("PAYMENT_RESULT", "S", EventType.purchaseCompleted), ("PAYMENT_RESULT", "F", .purchaseFailed),
        ("PAYMENT_RESULT", "U", .storeOther), ("PAYMENT_PENDING", "S", .purchasePending),
        ("OFFLINE_PAYMENT_CODE", "S", .storeOther),
    ])
    func types(notifyType: String, status: String, expected: EventType) {
        #expect(AlipayPlusNormalizer.eventType(notifyType: notifyType, resultStatus: status) == expected)
    }
}
