import Events

/// A one-time product purchase as `purchases.products.get` answers it
/// (https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.products).
/// Property names are Google's field names; everything is optional.
public struct ProductPurchase: Decodable, Sendable, Equatable {
    /// `androidpublisher#productPurchase`.
    public let kind: String?
    /// Milliseconds since 1970 (a string on the wire, as Google writes int64).
    public let purchaseTimeMillis: Int64?
    public let purchaseState: PurchaseState?
    /// 0 yet to be consumed, 1 consumed.
    public let consumptionState: Int?
    public let developerPayload: String?
    public let orderId: String?
    /// Only for purchases outside the standard flow: 0 test (license tester), 1 promo code, 2 rewarded ad.
    public let purchaseType: Int?
    /// 0 yet to be acknowledged, 1 acknowledged.
    public let acknowledgementState: Int?
    public let purchaseToken: String?
    public let productId: String?
    /// Absent means 1.
    public let quantity: Int?
    public let obfuscatedExternalAccountId: String?
    public let obfuscatedExternalProfileId: String?
    public let regionCode: String?
    /// How many of `quantity` are not yet refunded.
    public let refundableQuantity: Int?

    public var purchaseTime: Timestamp? { purchaseTimeMillis.map { Timestamp(millisecondsSince1970: $0) } }

    /// `purchaseState`, kept open: 0 purchased, 1 canceled, 2 pending, and whatever Google adds.
    public struct PurchaseState: RawRepresentable, Hashable, Sendable, Decodable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(Int.self) }

        public static let purchased = PurchaseState(rawValue: 0)
        public static let canceled = PurchaseState(rawValue: 1)
        public static let pending = PurchaseState(rawValue: 2)
    }

    private enum CodingKeys: String, CodingKey {
        case kind, purchaseTimeMillis, purchaseState, consumptionState, developerPayload, orderId, purchaseType
        case acknowledgementState, purchaseToken, productId, quantity, obfuscatedExternalAccountId
        case obfuscatedExternalProfileId, regionCode, refundableQuantity
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decodeIfPresent(String.self, forKey: .kind)
        purchaseTimeMillis = try c.decodeInt64StringIfPresent(forKey: .purchaseTimeMillis)
        purchaseState = try c.decodeIfPresent(PurchaseState.self, forKey: .purchaseState)
        consumptionState = try c.decodeIfPresent(Int.self, forKey: .consumptionState)
        developerPayload = try c.decodeIfPresent(String.self, forKey: .developerPayload)
        orderId = try c.decodeIfPresent(String.self, forKey: .orderId)
        purchaseType = try c.decodeIfPresent(Int.self, forKey: .purchaseType)
        acknowledgementState = try c.decodeIfPresent(Int.self, forKey: .acknowledgementState)
        purchaseToken = try c.decodeIfPresent(String.self, forKey: .purchaseToken)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        quantity = try c.decodeIfPresent(Int.self, forKey: .quantity)
        obfuscatedExternalAccountId = try c.decodeIfPresent(String.self, forKey: .obfuscatedExternalAccountId)
        obfuscatedExternalProfileId = try c.decodeIfPresent(String.self, forKey: .obfuscatedExternalProfileId)
        regionCode = try c.decodeIfPresent(String.self, forKey: .regionCode)
        refundableQuantity = try c.decodeIfPresent(Int.self, forKey: .refundableQuantity)
    }
}
