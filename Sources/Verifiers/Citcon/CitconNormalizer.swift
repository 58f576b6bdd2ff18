import Events
import Rejections

/// Turns a verified Citcon IPN into its event, reading only values the signature covers: a field
/// outside `fields` could have been added or changed by anyone on the way.
struct CitconNormalizer {
    let account: String
    let body: CitconBody
    let signedNames: Set<String>
    let receivedAt: Timestamp

    func event() throws(Rejection) -> NormalizedEvent {
        let id = try required("id")
        let reference = try required("reference")
        // Legacy (CHOP) IPNs carry no transaction type: they notify charges, with `notify_status`.
        let transactionType = body.format == .upi ? try required("transaction_type") : signed("transaction_type") ?? "charge"
        let status = try required(body.format == .upi ? "status" : "notify_status")

        let timeNames = body.format == .upi ? ["time_completed", "time_created"] : ["time"]
        var occurredAt = receivedAt
        for name in timeNames {
            if let text = signed(name), let time = try Self.timestamp(text, field: name) {
                occurredAt = time
                break
            }
        }
        return NormalizedEvent(
            id: "citcon:\(EventIdScope.component(account)):\(id):\(transactionType):\(status)",
            type: CitconEventType.eventType(transactionType: transactionType, status: status),
            source: "/citcon/\(account)", environment: .production, app: account, subject: reference,
            occurredAt: occurredAt.rfc3339, receivedAt: receivedAt.rfc3339,
            transaction: NormalizedEvent.Transaction(
                id: id, purchasedAt: try signed("time_created").flatMap { (text) throws(Rejection) in try Self.timestamp(text, field: "time_created") }?.rfc3339),
            price: MinorUnits.price(signed("amount"), currency: signed("currency")),
            sourceType: "\(transactionType)/\(status)")
    }

    /// A signed, textual value; nil when absent or unsigned.
    private func signed(_ name: String) -> String? {
        signedNames.contains(name) ? body[name] : nil
    }

    private func required(_ name: String) throws(Rejection) -> String {
        guard let value = body[name], !value.isEmpty else { throw Rejection(.missingField, "\(name) is missing or empty") }
        guard signedNames.contains(name) else { throw Rejection(.unsignedField, "\(name) is not listed in fields, so it is not signed") }
        return value
    }

    /// RFC 3339 (UPI: `2021-08-14T09:47:43.000Z`), or epoch seconds or milliseconds; nil when it is
    /// none of them, `invalid_field` when it is one but outside years 0000-9999.
    static func timestamp(_ text: String, field: String) throws(Rejection) -> Timestamp? {
        if let parsed = try EventTime.rfc3339(text, field: field) { return parsed }
        guard let number = Int64(text), number > 0 else { return nil }
        return try EventTime.milliseconds(text.utf8.count <= 10 ? number * 1000 : number, field: field)
    }
}
