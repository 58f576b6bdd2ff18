/// `JWSTransactionDecodedPayload` (the fields Tollgate normalizes; others are ignored).
public struct TransactionPayload: Sendable, Decodable {
    public var originalTransactionId: String?
    public var transactionId: String?
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: AppleDate?
    public var originalPurchaseDate: AppleDate?
    public var expiresDate: AppleDate?
    public var quantity: Int?
    public var type: String?
    public var appAccountToken: String?
    public var inAppOwnershipType: String?
    public var signedDate: AppleDate?
    public var revocationReason: Int?
    public var revocationDate: AppleDate?
    public var isUpgraded: Bool?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var environment: AppleEnvironment?
    public var storefront: String?
    public var transactionReason: String?
    public var currency: String?
    /// Milliunits of the currency.
    public var price: Int64?
}
