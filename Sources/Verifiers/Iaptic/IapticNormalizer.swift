import Events
import Rejections
import Toolkit

/// Turns a verified Iaptic body into normalized events: one per purchase in `purchases`.
/// The notification's reason applies to the purchase it names (or to all when it names none);
/// the other purchases get a `subscription.updated` snapshot.
struct IapticNormalizer {
    let app: String
    let body: JSONValue
    let rawBody: [UInt8]
    let receivedAt: Timestamp

    private var source: String { "/iaptic/\(app)" }
    /// Every id names the app whose secret authenticated the delivery (Sources/Verifiers/Normalization/EventIdScope.swift).
    private var idPrefix: String { "iaptic:\(EventIdScope.component(app))" }
    private var notification: [String: JSONValue] { body["notification"]?.object ?? [:] }
    private var user: String? { body["applicationUsername"]?.string.flatMap { $0.isEmpty ? nil : $0 } }

    func testEvent() -> NormalizedEvent {
        let digest = String(Digest.hex(Digest.sha256(rawBody)).prefix(32))
        return NormalizedEvent(id: "\(idPrefix):test:\(digest)", type: .storeTest, source: source, environment: .production,
                               app: app, subject: "test", occurredAt: receivedAt.rfc3339, receivedAt: receivedAt.rfc3339,
                               user: user, sourceType: "test")
    }

    func otherEvent(type: String) -> NormalizedEvent {
        let digest = String(Digest.hex(Digest.sha256(rawBody)).prefix(32))
        return NormalizedEvent(id: "\(idPrefix):\(digest):\(type)", type: .storeOther, source: source, environment: .production,
                               app: app, subject: user ?? "unknown", occurredAt: receivedAt.rfc3339,
                               receivedAt: receivedAt.rfc3339, user: user, sourceType: type)
    }

    func purchaseEvents() throws(Rejection) -> [NormalizedEvent] {
        guard let purchasesValue = body["purchases"] else { return [] }
        guard let purchases = purchasesValue.object else {
            throw Rejection(.invalidField, "purchases must be an object keyed by product id")
        }
        var events: [NormalizedEvent] = []
        for key in purchases.keys.sorted(by: UTF8Order.precedes) {
            guard let purchase = purchases[key]?.object else {
                throw Rejection(.invalidField, "purchases.\(key) must be an object")
            }
            events.append(try event(productKey: key, purchase: purchase))
        }
        return events
    }

    private func event(productKey: String, purchase: [String: JSONValue]) throws(Rejection) -> NormalizedEvent {
        guard let purchaseId = purchase["purchaseId"]?.string, !purchaseId.isEmpty else {
            throw Rejection(.missingField, "purchases.\(productKey).purchaseId is missing")
        }
        let product = purchase["productId"]?.string ?? productKey
        let isSubscription = purchase["expirationDate"] != nil || purchase["renewalIntent"] != nil
            || (purchase["productType"]?.string?.lowercased().contains("subscription") ?? false)
        let reason = notification["reason"]?.string
        let type = targets(purchaseId: purchaseId, product: product, purchase: purchase)
            ? IapticReason.eventType(reason: reason, isSubscription: isSubscription)
            : .subscriptionUpdated
        let stateId = notification["id"]?.string.flatMap { $0.isEmpty ? nil : $0 }
            ?? String(Digest.hex(Digest.sha256(JSONValue.object(purchase).canonical + (reason ?? ""))).prefix(32))

        // A time the event could not write is refused, not dropped: the purchase would read differently.
        for name in Self.timeFields { try Self.checkTime(purchase[name], field: "purchases.\(productKey).\(name)") }
        try Self.checkTime(notification["date"], field: "notification.date")
        let occurredAt = [notification["date"], purchase["lastRenewalDate"], purchase["purchaseDate"]]
            .lazy.compactMap { $0.flatMap(Self.timestamp) }.first ?? receivedAt

        var price: NormalizedEvent.Price?
        if let micros = (purchase["amountMicros"] ?? purchase["priceMicros"])?.int64, let currency = purchase["currency"]?.string {
            price = NormalizedEvent.Price(amountMicros: micros, currency: currency)
        }
        var subscription: NormalizedEvent.Subscription?
        if isSubscription {
            let renewalIntent = purchase["renewalIntent"]?.string?.lowercased()
            subscription = NormalizedEvent.Subscription(
                autoRenew: renewalIntent.map { $0 == "renew" },
                gracePeriodExpiresAt: purchase["gracePeriodEndDate"].flatMap(Self.timestamp)?.rfc3339,
                billingRetry: purchase["isBillingRetryPeriod"]?.bool,
                state: Self.state(purchase))
        }
        let sourceType = reason.map { "purchases.updated/\($0)" } ?? "purchases.updated"
        return NormalizedEvent(
            id: "\(idPrefix):\(stateId):\(purchaseId)", type: type, source: source,
            environment: purchase["sandbox"]?.bool == true ? .sandbox : .production,
            app: app, subject: purchaseId, occurredAt: occurredAt.rfc3339, receivedAt: receivedAt.rfc3339,
            user: user, product: product,
            transaction: NormalizedEvent.Transaction(
                id: purchase["transactionId"]?.string, originalId: purchaseId,
                purchasedAt: purchase["purchaseDate"].flatMap(Self.timestamp)?.rfc3339,
                expiresAt: purchase["expirationDate"].flatMap(Self.timestamp)?.rfc3339,
                revokedAt: (purchase["refundDate"] ?? purchase["cancelationDate"]).flatMap(Self.timestamp)?.rfc3339,
                quantity: purchase["quantity"]?.int64.map { Int($0) }),
            price: price, subscription: subscription,
            reason: purchase["cancelationReason"]?.string?.lowercased(), sourceType: sourceType)
    }

    /// Whether the notification is about this purchase: it names it by purchase, transaction or
    /// product id, or names none at all.
    private func targets(purchaseId: String, product: String, purchase: [String: JSONValue]) -> Bool {
        let named = [notification["purchaseId"]?.string, notification["transactionId"]?.string, notification["productId"]?.string]
            .compactMap { $0 }
        if named.isEmpty { return true }
        let ids = [purchaseId, product, purchase["transactionId"]?.string].compactMap { $0 }
        return named.contains(where: ids.contains)
    }

    private static func state(_ purchase: [String: JSONValue]) -> String? {
        if purchase["isExpired"]?.bool == true { return "expired" }
        if purchase["isBillingRetryPeriod"]?.bool == true { return "billing_retry" }
        if purchase["expirationDate"] != nil { return "active" }
        return nil
    }

    static let timeFields = ["lastRenewalDate", "purchaseDate", "expirationDate", "gracePeriodEndDate", "refundDate", "cancelationDate"]

    /// Iaptic dates are RFC 3339 text; epoch milliseconds are accepted too. Nil for anything else,
    /// and for times outside years 0000-9999 (which `checkTime` refuses first).
    static func timestamp(_ value: JSONValue) -> Timestamp? {
        switch value {
        case .string(let text): return Timestamp(rfc3339: text)
        case .number(let number): return number.int64.flatMap(Timestamp.init(representableMillisecondsSince1970:))
        default: return nil
        }
    }

    /// `invalid_field` for a time outside years 0000-9999.
    static func checkTime(_ value: JSONValue?, field: String) throws(Rejection) {
        switch value {
        case .string(let text)?: _ = try EventTime.rfc3339(text, field: field)
        case .number(let number)?: if let ms = number.int64 { _ = try EventTime.milliseconds(ms, field: field) }
        default: break
        }
    }
}
