/// `JWSRenewalInfoDecodedPayload` (the fields Tollgate normalizes; others are ignored).
public struct RenewalInfoPayload: Sendable, Decodable {
    public var expirationIntent: Int?
    public var originalTransactionId: String?
    public var autoRenewProductId: String?
    public var productId: String?
    public var autoRenewStatus: Int?
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: Int?
    public var gracePeriodExpiresDate: AppleDate?
    public var offerType: Int?
    public var signedDate: AppleDate?
    public var environment: AppleEnvironment?
    public var recentSubscriptionStartDate: AppleDate?
    public var renewalDate: AppleDate?
    public var currency: String?
    public var renewalPrice: Int64?
    public var appAccountToken: String?
}
