import Events

/// How an Apple transaction's fields become the normalized event's: one mapping for the notifications
/// (`AppleNormalizer`), the purchases apps report and the notification backfill (the purchases' verifier
/// in `Sources/Merchant`).
extension TransactionPayload {
    /// `type` of an auto-renewable subscription.
    public static let autoRenewable = "Auto-Renewable Subscription"

    public var isAutoRenewable: Bool { type == Self.autoRenewable }

    /// The price in micros of its currency; nil without one, or when its milliunits overflow Int64 as
    /// micros (no price anyone charged: left out, not trapped on).
    public var normalizedPrice: NormalizedEvent.Price? {
        guard let milliunits = price, let currency, case (let micros, false) = milliunits.multipliedReportingOverflow(by: 1_000) else {
            return nil
        }
        return NormalizedEvent.Price(amountMicros: micros, currency: currency)
    }

    /// Its ids, dates (RFC 3339), quantity, and how it was refunded or revoked (a type Apple adds later
    /// is left out; a percentage outside 0...100% too).
    public var normalizedTransaction: NormalizedEvent.Transaction {
        NormalizedEvent.Transaction(id: transactionId, originalId: originalTransactionId, purchasedAt: purchaseDate?.rfc3339,
                                    expiresAt: expiresDate?.rfc3339, revokedAt: revocationDate?.rfc3339,
                                    quantity: quantity.flatMap { (1...1_000_000).contains($0) ? Int($0) : nil },
                                    revocationType: revocationType.flatMap { NormalizedEvent.Transaction.Revocation(rawValue: $0.lowercased()) },
                                    revocationPercentage: revocationPercentage.flatMap { (0...100_000).contains($0) ? Int($0) : nil },
                                    offerType: offerType.flatMap { Self.offerTypeNames[$0] },
                                    offerDiscountType: offerDiscountType.flatMap { Self.offerDiscountTypes.contains($0) ? $0.lowercased() : nil },
                                    appTransactionId: appTransactionId,
                                    billingPlan: billingPlanType.flatMap { ["BILLED_UPFRONT", "MONTHLY"].contains($0) ? $0.lowercased() : nil },
                                    commitment: commitmentInfo.map { info in
                                        NormalizedEvent.Transaction.Commitment(
                                            period: info.billingPeriodNumber.flatMap { (1...120).contains($0) ? Int($0) : nil },
                                            periods: info.totalBillingPeriods.flatMap { (1...120).contains($0) ? Int($0) : nil },
                                            expiresAt: info.commitmentExpiresDate?.rfc3339)
                                    })
    }

    /// `offerType`'s codes by name; a code Apple adds later is left out.
    static let offerTypeNames: [Int64: String] = [1: "introductory", 2: "promotional", 3: "offer_code", 4: "win_back"]
    /// `offerDiscountType`'s values (`ONE_TIME`: an offer code for a one-time purchase); others are left out.
    static let offerDiscountTypes: Set<String> = ["FREE_TRIAL", "PAY_AS_YOU_GO", "PAY_UP_FRONT", "ONE_TIME"]
}
