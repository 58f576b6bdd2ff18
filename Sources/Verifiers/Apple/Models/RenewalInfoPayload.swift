import Rejections

/// `JWSRenewalInfoDecodedPayload` (the fields Tollgate normalizes; others are ignored).
public struct RenewalInfoPayload: Sendable, SignedPayload {
    public var expirationIntent: Int64?
    public var originalTransactionId: String?
    public var autoRenewProductId: String?
    public var productId: String?
    public var autoRenewStatus: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: AppleDate?
    public var signedDate: AppleDate?
    public var environment: AppleEnvironment?
    public var renewalDate: AppleDate?
    public var appAccountToken: String?
    /// A price increase: 0 the customer has not agreed yet, 1 agreed.
    public var priceIncreaseStatus: Int64?

    init(_ f: AppleFields) throws(Rejection) {
        expirationIntent = try f.int("expirationIntent")
        originalTransactionId = try f.string("originalTransactionId")
        autoRenewProductId = try f.string("autoRenewProductId")
        productId = try f.string("productId")
        autoRenewStatus = try f.int("autoRenewStatus")
        isInBillingRetryPeriod = try f.bool("isInBillingRetryPeriod")
        gracePeriodExpiresDate = try f.value("gracePeriodExpiresDate")
        signedDate = try f.value("signedDate")
        environment = try f.value("environment")
        renewalDate = try f.value("renewalDate")
        appAccountToken = try f.string("appAccountToken")
        priceIncreaseStatus = try f.int("priceIncreaseStatus")
    }
}
