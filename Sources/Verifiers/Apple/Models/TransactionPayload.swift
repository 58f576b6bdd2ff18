import Rejections

/// `JWSTransactionDecodedPayload` (the fields Tollgate normalizes; others are ignored).
public struct TransactionPayload: Sendable, SignedPayload {
    public var originalTransactionId: String?
    public var transactionId: String?
    public var bundleId: String?
    public var productId: String?
    public var purchaseDate: AppleDate?
    public var originalPurchaseDate: AppleDate?
    public var expiresDate: AppleDate?
    public var quantity: Int64?
    public var type: String?
    public var appAccountToken: String?
    public var signedDate: AppleDate?
    public var revocationReason: Int64?
    public var revocationDate: AppleDate?
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
    public var revocationType: String?
    /// Milliunits of a percent (40000: 40%), of the whole quantity; absent once a refund is reversed.
    public var revocationPercentage: Int64?
    public var environment: AppleEnvironment?
    public var currency: String?
    /// Milliunits of the currency.
    public var price: Int64?
    /// 1 introductory offer, 2 promotional offer, 3 offer code, 4 win-back offer.
    public var offerType: Int64?
    public var offerIdentifier: String?
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `ONE_TIME` (a one-time purchase's offer code).
    public var offerDiscountType: String?
    public var appTransactionId: String?
    /// `BILLED_UPFRONT`, or `MONTHLY` (monthly payments within a 12-month commitment, `commitmentInfo`).
    public var billingPlanType: String?
    public var commitmentInfo: CommitmentInfo?

    /// `TransactionCommitmentInfo`.
    public struct CommitmentInfo: Sendable {
        /// The billing period this transaction pays, 1 to 12, of `totalBillingPeriods`.
        public var billingPeriodNumber: Int64?
        public var totalBillingPeriods: Int64?
        public var commitmentExpiresDate: AppleDate?

        init(_ f: AppleFields) throws(Rejection) {
            billingPeriodNumber = try f.int("billingPeriodNumber")
            totalBillingPeriods = try f.int("totalBillingPeriods")
            commitmentExpiresDate = try f.value("commitmentExpiresDate")
        }
    }

    init(_ f: AppleFields) throws(Rejection) {
        originalTransactionId = try f.string("originalTransactionId")
        transactionId = try f.string("transactionId")
        bundleId = try f.string("bundleId")
        productId = try f.string("productId")
        purchaseDate = try f.value("purchaseDate")
        originalPurchaseDate = try f.value("originalPurchaseDate")
        expiresDate = try f.value("expiresDate")
        quantity = try f.int("quantity")
        type = try f.string("type")
        appAccountToken = try f.string("appAccountToken")
        signedDate = try f.value("signedDate")
        revocationReason = try f.int("revocationReason")
        revocationDate = try f.value("revocationDate")
        revocationType = try f.string("revocationType")
        revocationPercentage = try f.int("revocationPercentage")
        environment = try f.value("environment")
        currency = try f.string("currency")
        price = try f.int("price")
        offerType = try f.int("offerType")
        offerIdentifier = try f.string("offerIdentifier")
        offerDiscountType = try f.string("offerDiscountType")
        appTransactionId = try f.string("appTransactionId")
        billingPlanType = try f.string("billingPlanType")
        commitmentInfo = try f.nested("commitmentInfo").map(CommitmentInfo.init)
    }
}

/// A payload decoded from a verified JWS.
protocol SignedPayload {
    init(_ fields: AppleFields) throws(Rejection)
}

extension NotificationPayload: SignedPayload {}
