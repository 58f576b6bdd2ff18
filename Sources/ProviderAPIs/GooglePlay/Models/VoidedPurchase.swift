/// One page of `purchases.voidedpurchases.list`
/// (https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.voidedpurchases/list):
/// the purchases of a package that were canceled, refunded or charged back. Property names are
/// Google's; everything is optional.
public struct VoidedPurchasesPage: Decodable, Sendable, Equatable {
    public struct TokenPagination: Decodable, Sendable, Equatable {
        /// Absent on the last page.
        public let nextPageToken: String?
    }

    public let voidedPurchases: [VoidedPurchase]?
    public let tokenPagination: TokenPagination?

    init(voidedPurchases: [VoidedPurchase]?, tokenPagination: TokenPagination?) {
        self.voidedPurchases = voidedPurchases
        self.tokenPagination = tokenPagination
    }
}

/// One voided purchase (`androidpublisher#voidedPurchase`).
public struct VoidedPurchase: Decodable, Sendable, Equatable {
    public let kind: String?
    /// The token of the purchase that was voided: what a `voidedPurchaseNotification` names.
    public let purchaseToken: String?
    public let purchaseTimeMillis: Int64?
    public let voidedTimeMillis: Int64?
    public let orderId: String?
    /// 0 user, 1 developer, 2 Google.
    public let voidedSource: Int?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud, 6 friendly fraud, 7 chargeback.
    public let voidedReason: Int?
    /// 1 full refund, 2 quantity-based partial refund.
    public let refundType: Int?
    public let voidedQuantity: Int?

    private enum CodingKeys: String, CodingKey {
        case kind, purchaseToken, purchaseTimeMillis, voidedTimeMillis, orderId, voidedSource, voidedReason, refundType, voidedQuantity
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decodeIfPresent(String.self, forKey: .kind)
        purchaseToken = try c.decodeIfPresent(String.self, forKey: .purchaseToken)
        purchaseTimeMillis = try c.decodeInt64StringIfPresent(forKey: .purchaseTimeMillis)
        voidedTimeMillis = try c.decodeInt64StringIfPresent(forKey: .voidedTimeMillis)
        orderId = try c.decodeIfPresent(String.self, forKey: .orderId)
        voidedSource = try c.decodeIfPresent(Int.self, forKey: .voidedSource)
        voidedReason = try c.decodeIfPresent(Int.self, forKey: .voidedReason)
        refundType = try c.decodeIfPresent(Int.self, forKey: .refundType)
        voidedQuantity = try c.decodeIfPresent(Int.self, forKey: .voidedQuantity)
    }
}
