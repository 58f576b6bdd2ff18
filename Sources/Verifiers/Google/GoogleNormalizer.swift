import Events

/// Turns a verified RTDN into its event. RTDNs carry no state (expiry, price, user): those fields
/// stay absent, and the entitlement workers ask the Play Developer API with the purchase token.
struct GoogleNormalizer {
    let notification: DeveloperNotification
    let messageId: String
    /// The Pub/Sub subscription the push names: message ids are unique per topic only, so the id is
    /// scoped by it (Sources/Verifiers/Normalization/EventIdScope.swift).
    let subscription: String
    let receivedAt: Timestamp

    func event() -> NormalizedEvent {
        let packageName = notification.packageName
        var subject = "notification:\(messageId)"
        var product: String?
        var transaction: NormalizedEvent.Transaction?
        var reason: String?
        var user: String?
        var refundReview: NormalizedEvent.RefundReview?
        let sourceType: String
        let type: EventType
        switch notification.kind {
        case .subscription(let sub):
            (sourceType, type) = GoogleEventType.subscription(sub.notificationType)
            subject = sub.purchaseToken
            product = sub.subscriptionId
        case .oneTimeProduct(let oneTime):
            (sourceType, type) = GoogleEventType.oneTimeProduct(oneTime.notificationType)
            subject = oneTime.purchaseToken
            product = oneTime.sku
        case .voidedPurchase(let voided):
            sourceType = "VOIDED_PURCHASE"
            type = .purchaseRefunded
            subject = voided.purchaseToken
            transaction = NormalizedEvent.Transaction(id: voided.orderId)
            reason = GoogleEventType.refundReason(voided.refundType)
        case .pendingRefundReview(let review):
            sourceType = "PENDING_REFUND_REVIEW"
            type = .purchaseRefundReviewRequested
            // The order is all it names: no purchase token to key it by.
            subject = "order:\(review.orderId)"
            transaction = NormalizedEvent.Transaction(id: review.orderId)
            reason = "chargeback"
            user = review.obfuscatedAccountId
            // Google takes the answer for 24 hours after the notification arrives.
            refundReview = NormalizedEvent.RefundReview(
                pendingRefundToken: review.pendingRefundToken,
                respondBy: Timestamp(millisecondsSince1970: receivedAt.millisecondsSince1970 + 86_400_000).rfc3339)
        case .test:
            sourceType = "TEST_NOTIFICATION"
            type = .storeTest
        case .other(let name, let purchaseToken):
            sourceType = name
            type = .storeOther
            if let purchaseToken { subject = purchaseToken }
        }
        var event = NormalizedEvent(
            id: "google:\(EventIdScope.component(subscription)):\(messageId)", type: type, source: "/google/\(packageName)", environment: .production,
            app: packageName, subject: subject,
            occurredAt: Timestamp(millisecondsSince1970: notification.eventTimeMillis).rfc3339,
            receivedAt: receivedAt.rfc3339, user: user, product: product, transaction: transaction, reason: reason,
            sourceType: sourceType)
        event.refundReview = refundReview
        return event
    }
}
