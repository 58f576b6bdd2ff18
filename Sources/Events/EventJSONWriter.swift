/// Writes a `NormalizedEvent` as the same bytes `JSONEncoder` with `.sortedKeys` and
/// `.withoutEscapingSlashes` produces (EventsTests compare the two), without Codable's dynamic
/// containers: encoding was about 4% of the gateway's CPU per delivery (docs/performance.md).
enum EventJSONWriter {
    typealias Value = SortedJSON.Value

    static func encode(_ event: NormalizedEvent) -> [UInt8] {
        SortedJSON.encode(.object([
            ("app", .string(event.app)),
            ("environment", .string(event.environment.rawValue)),
            ("id", .string(event.id)),
            ("occurredAt", .string(event.occurredAt)),
            ("price", event.price.map { .object([("amountMicros", .int($0.amountMicros)), ("currency", .string($0.currency))]) }),
            ("product", event.product.map(Value.string)),
            ("reason", event.reason.map(Value.string)),
            ("receivedAt", .string(event.receivedAt)),
            ("refundReview", event.refundReview.map { .object([("pendingRefundToken", .string($0.pendingRefundToken)),
                                                                ("respondBy", .string($0.respondBy))]) }),
            ("source", .string(event.source)),
            ("sourceType", .string(event.sourceType)),
            ("subject", .string(event.subject)),
            ("subscription", event.subscription.map { s in
                .object([("autoRenew", s.autoRenew.map(Value.bool)), ("billingRetry", s.billingRetry.map(Value.bool)),
                         ("gracePeriodExpiresAt", s.gracePeriodExpiresAt.map(Value.string)), ("offerPhase", s.offerPhase.map(Value.string)),
                         ("priceConsent", s.priceConsent.map(Value.string)), ("replacedProduct", s.replacedProduct.map(Value.string)),
                         ("state", s.state.map(Value.string))])
            }),
            ("transaction", event.transaction.map { t in
                .object([("appTransactionId", t.appTransactionId.map(Value.string)), ("billingPlan", t.billingPlan.map(Value.string)),
                         ("commitment", t.commitment.map { c in
                             .object([("expiresAt", c.expiresAt.map(Value.string)), ("period", c.period.map { .int(Int64($0)) }),
                                      ("periods", c.periods.map { .int(Int64($0)) })])
                         }),
                         ("expiresAt", t.expiresAt.map(Value.string)), ("id", t.id.map(Value.string)),
                         ("offerDiscountType", t.offerDiscountType.map(Value.string)), ("offerId", t.offerId.map(Value.string)),
                         ("offerType", t.offerType.map(Value.string)),
                         ("originalId", t.originalId.map(Value.string)), ("purchaseOption", t.purchaseOption.map(Value.string)),
                         ("purchasedAt", t.purchasedAt.map(Value.string)),
                         ("quantity", t.quantity.map { .int(Int64($0)) }), ("refundedQuantity", t.refundedQuantity.map { .int(Int64($0)) }),
                         ("rental", t.rental.map(Value.bool)),
                         ("revocationPercentage", t.revocationPercentage.map { .int(Int64($0)) }),
                         ("revocationType", t.revocationType.map { .string($0.rawValue) }), ("revokedAt", t.revokedAt.map(Value.string))])
            }),
            ("type", .string(event.type.rawValue)),
            ("user", event.user.map(Value.string)),
        ]), reserving: 768)
    }
}
