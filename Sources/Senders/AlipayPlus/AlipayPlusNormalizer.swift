import Events
import Toolkit

/// Turns a verified `notifyPayment` into its event. Antom puts the outcome in `result`, the Alipay+
/// acquirer variant in `paymentResult` (with `acquirerId`, `pspId`, `customerId`); both send
/// scalars as strings, so numbers written either way are read as text.
struct AlipayPlusNormalizer {
    let clientId: String
    let body: [String: JSONValue]
    let receivedAt: Timestamp

    func event() throws(Rejection) -> NormalizedEvent {
        let notifyType = try required("notifyType", in: body)
        guard let result = (body["result"] ?? body["paymentResult"])?.object else {
            throw Rejection(.missingField, "result (or paymentResult) is missing or not an object")
        }
        let resultStatus = try required("resultStatus", in: result, path: "result.")
        let paymentId = try required("paymentId", in: body)
        let paymentRequestId = try required("paymentRequestId", in: body)
        let type = Self.eventType(notifyType: notifyType, resultStatus: resultStatus)

        let occurredAt = [body["paymentTime"], body["paymentCreateTime"]].lazy
            .compactMap { Self.text($0).flatMap { Timestamp(rfc3339: $0) } }.first ?? receivedAt
        let amount = body["paymentAmount"]?.object
        let failure = type == .purchaseFailed ? Self.text(result["resultCode"])?.lowercased() : nil
        return NormalizedEvent(
            id: "alipayplus:\(EventIdScope.component(clientId)):\(paymentId):\(notifyType):\(resultStatus)", type: type, source: "/alipayplus/\(clientId)",
            // Antom sandbox client ids are issued with this prefix.
            environment: clientId.hasPrefix("SANDBOX_") ? .sandbox : .production,
            app: clientId, subject: paymentRequestId, occurredAt: occurredAt.rfc3339, receivedAt: receivedAt.rfc3339,
            user: Self.text(body["customerId"]).flatMap { $0.isEmpty ? nil : $0 },
            transaction: NormalizedEvent.Transaction(
                id: paymentId, purchasedAt: Self.text(body["paymentCreateTime"]).flatMap { Timestamp(rfc3339: $0) }?.rfc3339),
            price: MinorUnits.price(Self.text(amount?["value"]), currency: Self.text(amount?["currency"])),
            reason: failure, sourceType: "\(notifyType)/\(resultStatus)")
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

    /// A string, or a number as written.
    static func text(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)?: text
        case .number(let number)?: number.text
        default: nil
        }
    }
}
