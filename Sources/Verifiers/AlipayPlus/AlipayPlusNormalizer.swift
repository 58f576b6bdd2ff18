import Events
import Rejections
import Toolkit

/// Turns a verified `notifyPayment` or `notifyRefund` into its event. Two shapes carry a payment:
/// - Antom's, to merchants: `notifyType` (`PAYMENT_RESULT`, `PAYMENT_PENDING`) and the outcome in
///   `result` (some acquirer variants put it in `paymentResult`), `paymentId` always present;
/// - Alipay+'s, to acquiring and issuing participants: no `notifyType` (it reports final results
///   only, so it is a `PAYMENT_RESULT`), the outcome in `paymentResult` (`resultStatus` S success,
///   F failure), `paymentId` only once the payment succeeded, with `acquirerId`, `pspId`, `customerId`.
/// Antom's `notifyRefund` (`notifyType` REFUND_RESULT) names the merchant's `refundRequestId`, not the
/// payment: its event's subject is that id, and the workers find the checkout whose refund it is
/// (docs/checkouts.md). Antom's `notifyDispute` has no `notifyType`: it names the payment
/// (`paymentRequestId`) and the dispute's stage (`disputeNotificationType`); only a judgement against
/// the merchant (`DISPUTE_JUDGED` / `ACCEPT_BY_MERCHANT`: the money goes back to the payer) is a
/// chargeback, every other stage is `store.other`.
/// Both send scalars as strings, so numbers written either way are read as text.
struct AlipayPlusNormalizer {
    let clientId: String
    let body: [String: JSONValue]
    let receivedAt: Timestamp

    /// What participant notifications mean, having no `notifyType` of their own.
    static let participantNotifyType = "PAYMENT_RESULT"

    /// The `notifyType` of Antom's refund results.
    static let refundNotifyType = "REFUND_RESULT"

    func event() throws(Rejection) -> NormalizedEvent {
        if Self.text(body["notifyType"]) == Self.refundNotifyType { return try refundEvent() }
        if body["notifyType"] == nil, body["disputeNotificationType"] != nil { return try disputeEvent() }
        let notifyType: String
        let result: [String: JSONValue]
        let resultPath: String
        let paymentId: String?
        if body["notifyType"] != nil || body["result"] != nil {
            notifyType = try required("notifyType", in: body)
            guard let outcome = (body["result"] ?? body["paymentResult"])?.object else {
                throw Rejection(.missingField, "result (or paymentResult) is missing or not an object")
            }
            (result, resultPath) = (outcome, body["result"] != nil ? "result." : "paymentResult.")
            paymentId = try required("paymentId", in: body)
        } else {
            guard let outcomeValue = body["paymentResult"] else {
                throw Rejection(.missingField, "notifyType and result (Antom), or paymentResult (Alipay+), are missing")
            }
            guard let outcome = outcomeValue.object else { throw Rejection(.invalidField, "paymentResult is not an object") }
            (notifyType, result, resultPath) = (Self.participantNotifyType, outcome, "paymentResult.")
            paymentId = try optional("paymentId", in: body)
        }
        let resultStatus = try required("resultStatus", in: result, path: resultPath)
        let paymentRequestId = try required("paymentRequestId", in: body)
        let type = Self.eventType(notifyType: notifyType, resultStatus: resultStatus)
        // A failed participant payment may have no paymentId yet: the request id, marked, stands for it.
        let payment = paymentId ?? "request=\(paymentRequestId)"

        // Text that is not RFC 3339 is passed over; a time outside years 0000-9999 is refused.
        let paymentTime = try Self.text(body["paymentTime"]).flatMap { (text) throws(Rejection) in try EventTime.rfc3339(text, field: "paymentTime") }
        let createTime = try Self.text(body["paymentCreateTime"]).flatMap { (text) throws(Rejection) in try EventTime.rfc3339(text, field: "paymentCreateTime") }
        let occurredAt = paymentTime ?? createTime ?? receivedAt
        let amount = body["paymentAmount"]?.object
        let failure = type == .purchaseFailed ? Self.text(result["resultCode"])?.lowercased() : nil
        return NormalizedEvent(
            id: "alipayplus:\(EventIdScope.component(clientId)):\(payment):\(notifyType):\(resultStatus)", type: type,
            source: "/alipayplus/\(clientId)",
            // Antom sandbox client ids are issued with this prefix.
            environment: clientId.hasPrefix("SANDBOX_") ? .sandbox : .production,
            app: clientId, subject: paymentRequestId, occurredAt: occurredAt.rfc3339, receivedAt: receivedAt.rfc3339,
            user: Self.text(body["customerId"]).flatMap { $0.isEmpty ? nil : $0 },
            transaction: NormalizedEvent.Transaction(
                id: paymentId, purchasedAt: createTime?.rfc3339),
            price: MinorUnits.price(Self.text(amount?["value"]), currency: Self.text(amount?["currency"])),
            reason: failure, sourceType: "\(notifyType)/\(resultStatus)")
    }

    /// `refundStatus` SUCCESS: `purchase.refunded`; FAIL: `purchase.refund_declined` (the money stays
    /// with the merchant, the purchase stands). `refundTime` is sent with successes only.
    private func refundEvent() throws(Rejection) -> NormalizedEvent {
        guard let result = body["result"]?.object else { throw Rejection(.missingField, "result is missing or not an object") }
        let refundRequestId = try required("refundRequestId", in: body)
        let refundId = try required("refundId", in: body)
        let refundStatus = try required("refundStatus", in: body)
        let type: EventType = switch refundStatus {
        case "SUCCESS": .purchaseRefunded
        case "FAIL": .purchaseRefundDeclined
        default: .storeOther
        }
        let refundTime = try Self.text(body["refundTime"]).flatMap { (text) throws(Rejection) in try EventTime.rfc3339(text, field: "refundTime") }
        let amount = body["refundAmount"]?.object
        return NormalizedEvent(
            id: "alipayplus:\(EventIdScope.component(clientId)):\(refundId):\(Self.refundNotifyType):\(refundStatus)", type: type,
            source: "/alipayplus/\(clientId)",
            environment: clientId.hasPrefix("SANDBOX_") ? .sandbox : .production,
            app: clientId, subject: refundRequestId, occurredAt: (refundTime ?? receivedAt).rfc3339, receivedAt: receivedAt.rfc3339,
            transaction: NormalizedEvent.Transaction(id: refundId),
            price: MinorUnits.price(Self.text(amount?["value"]), currency: Self.text(amount?["currency"])),
            reason: type == .purchaseRefundDeclined ? Self.text(result["resultCode"])?.lowercased() : nil,
            sourceType: "\(Self.refundNotifyType)/\(refundStatus)")
    }

    private func disputeEvent() throws(Rejection) -> NormalizedEvent {
        let paymentRequestId = try required("paymentRequestId", in: body)
        let paymentId = try required("paymentId", in: body)
        let disputeId = try required("disputeId", in: body)
        let stage = try required("disputeNotificationType", in: body)
        let judgement = stage == "DISPUTE_JUDGED" ? try optional("disputeJudgedResult", in: body) : nil
        let type: EventType = judgement == "ACCEPT_BY_MERCHANT" ? .purchaseChargeback : .storeOther
        let judgedTime = try Self.text(body["disputeJudgedTime"]).flatMap { (text) throws(Rejection) in try EventTime.rfc3339(text, field: "disputeJudgedTime") }
        let disputeTime = try Self.text(body["disputeTime"]).flatMap { (text) throws(Rejection) in try EventTime.rfc3339(text, field: "disputeTime") }
        let amount = (body["disputeJudgedAmount"] ?? body["disputeAmount"])?.object
        let sourceType = judgement.map { "\(stage)/\($0)" } ?? stage
        return NormalizedEvent(
            id: "alipayplus:\(EventIdScope.component(clientId)):\(disputeId):\(sourceType)", type: type,
            source: "/alipayplus/\(clientId)",
            environment: clientId.hasPrefix("SANDBOX_") ? .sandbox : .production,
            app: clientId, subject: paymentRequestId, occurredAt: (judgedTime ?? disputeTime ?? receivedAt).rfc3339,
            receivedAt: receivedAt.rfc3339,
            transaction: NormalizedEvent.Transaction(id: paymentId),
            price: MinorUnits.price(Self.text(amount?["value"]), currency: Self.text(amount?["currency"])),
            reason: type == .purchaseChargeback ? Self.text(body["disputeReasonCode"]).map { $0.lowercased() } : nil,
            sourceType: sourceType)
    }

    static func eventType(notifyType: String, resultStatus: String) -> EventType {
        switch (notifyType, resultStatus) {
        case ("PAYMENT_RESULT", "S"): .purchaseCompleted
        case ("PAYMENT_RESULT", "F"): .purchaseFailed
        case ("PAYMENT_PENDING", _): .purchasePending
        default: .storeOther
        }
    }

    private func required(_ name: String, in object: [String: JSONValue], path: String = "") throws(Rejection) -> String {
        guard let value = object[name] else { throw Rejection(.missingField, "\(path)\(name) is missing") }
        guard let text = Self.text(value), !text.isEmpty else { throw Rejection(.invalidField, "\(path)\(name) is not a non-empty string") }
        return text
    }

    /// Absent or null: nil; otherwise as `required`.
    private func optional(_ name: String, in object: [String: JSONValue]) throws(Rejection) -> String? {
        switch object[name] {
        case nil, .null?: return nil
        default: return try required(name, in: object)
        }
    }

    /// A string, or a number as written.
    static func text(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)?: text
        case .number(let number)?: number.text
        default: nil
        }
    }
}

extension NormalizedEvent {
    /// An Antom refund result: its `subject` is the merchant's `refundRequestId`, which names no payment
    /// until the workers find the checkout that asked for the refund.
    public var isAlipayPlusRefundResult: Bool {
        source.hasPrefix("/alipayplus/") && sourceType.hasPrefix(AlipayPlusNormalizer.refundNotifyType + "/")
    }
}
