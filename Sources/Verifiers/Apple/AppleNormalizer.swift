import Events

/// A verified notification, with its verified nested payloads, as one normalized event.
struct AppleNormalizer {
    let payload: NotificationPayload
    let transaction: TransactionPayload?
    let renewal: RenewalInfoPayload?
    let bundleId: String
    let environment: AppleEnvironment
    let notificationUUID: String
    let receivedAt: Timestamp

    func event() -> NormalizedEvent {
        let type = AppleEventType.of(payload.notificationType, payload.subtype)
        let sourceType = [payload.notificationType?.rawValue ?? "UNKNOWN", payload.subtype?.rawValue].compactMap { $0 }
            .joined(separator: "/")
        var subscription: NormalizedEvent.Subscription?
        if renewal != nil || payload.data?.status != nil || transaction?.isAutoRenewable == true {
            subscription = NormalizedEvent.Subscription(
                autoRenew: renewal?.autoRenewStatus.map { $0 == 1 },
                gracePeriodExpiresAt: renewal?.gracePeriodExpiresDate.map(\.rfc3339),
                billingRetry: renewal?.isInBillingRetryPeriod,
                state: payload.data?.status.flatMap(Self.state))
        }
        return NormalizedEvent(
            id: "apple:\(notificationUUID)", type: type, source: "/apple/\(bundleId)",
            environment: environment == .production ? .production : .sandbox, app: bundleId, subject: subject,
            occurredAt: payload.signedDate.map(\.rfc3339) ?? receivedAt.rfc3339, receivedAt: receivedAt.rfc3339,
            user: transaction?.appAccountToken ?? renewal?.appAccountToken,
            product: transaction?.productId ?? renewal?.productId ?? payload.summary?.productId,
            transaction: transaction?.normalizedTransaction,
            price: transaction?.normalizedPrice, subscription: subscription, reason: reason(type), sourceType: sourceType)
    }

    /// The purchase this notification is about; summary and external-token notifications have none,
    /// so they get stable ids of their own.
    var subject: String {
        if let id = transaction?.originalTransactionId ?? renewal?.originalTransactionId { return id }
        if let request = payload.summary?.requestIdentifier { return "summary:\(request)" }
        if let external = payload.externalPurchaseToken?.externalPurchaseId { return "external:\(external)" }
        return "notification:\(notificationUUID)"
    }

    private func reason(_ type: EventType) -> String? {
        switch type {
        case .purchaseRefunded, .subscriptionRevoked:
            switch transaction?.revocationReason {
            case 0: return "other"
            case 1: return "app_issue"
            default: return nil
            }
        case .purchaseConsumptionRequested:
            return payload.data?.consumptionRequestReason?.lowercased()
        case .externalPurchaseTokenCreated, .externalPurchaseTokenActive, .externalPurchaseTokenUnreported:
            // The token's type (`acquisition`, `services`): which report Apple expects.
            return payload.externalPurchaseToken?.tokenType.map { $0.lowercased() }
        default:
            return payload.subtype?.rawValue.lowercased()
        }
    }

    /// `status` of the subscription: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    static func state(_ status: Int64) -> String? {
        switch status {
        case 1: "active"
        case 2: "expired"
        case 3: "billing_retry"
        case 4: "grace_period"
        case 5: "revoked"
        default: nil
        }
    }

}
