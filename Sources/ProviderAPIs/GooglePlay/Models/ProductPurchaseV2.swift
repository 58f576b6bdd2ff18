import Events

/// A one-time product purchase as `purchases.productsv2.getproductpurchasev2` answers it
/// (https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.productsv2): one line
/// item per product bought, each with its purchase option, offer and quantity (Play Billing 8's
/// purchase options and offers). Property names are Google's; everything is optional.
public struct ProductPurchaseV2: Decodable, Sendable, Equatable {
    /// `androidpublisher#productPurchaseV2`.
    public let kind: String?
    public let productLineItem: [LineItem]?
    public let purchaseStateContext: PurchaseStateContext?
    /// Present only for a test purchase (a license tester's test card).
    public let testPurchaseContext: TestPurchaseContext?
    public let orderId: String?
    public let obfuscatedExternalAccountId: String?
    public let obfuscatedExternalProfileId: String?
    public let regionCode: String?
    /// When the payment completed; absent while pending.
    public let purchaseCompletionTime: Timestamp?
    /// `ACKNOWLEDGEMENT_STATE_PENDING` or `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    public let acknowledgementState: String?

    public var purchaseState: String? { purchaseStateContext?.purchaseState }

    /// The units not refunded over every line item (each at most its quantity; a missing quantity is one).
    /// `afterVoid`: a refund is confirmed, so a missing `refundableQuantity` is none (proto3 JSON leaves zeros
    /// out); otherwise it is the whole quantity.
    public func unitsHeld(afterVoid: Bool) -> Int {
        (productLineItem ?? []).reduce(0) { total, item in
            let quantity = max(1, item.productOfferDetails?.quantity ?? 1)
            return total + min(quantity, max(0, item.productOfferDetails?.refundableQuantity ?? (afterVoid ? 0 : quantity)))
        }
    }

    /// The line item of `productId`, if the purchase holds one.
    public func lineItem(_ productId: String) -> LineItem? { productLineItem?.first { $0.productId == productId } }

    public struct PurchaseStateContext: Decodable, Sendable, Equatable {
        /// `PURCHASED`, `CANCELLED`, `PENDING` (or `PURCHASE_STATE_UNSPECIFIED`).
        public let purchaseState: String?
    }

    public struct TestPurchaseContext: Decodable, Sendable, Equatable {
        /// `TEST`: paid with a test card.
        public let fopType: String?
    }

    /// `ProductLineItem`.
    public struct LineItem: Decodable, Sendable, Equatable {
        public let productId: String?
        public let productOfferDetails: OfferDetails?
    }

    /// `ProductOfferDetails`: how the line item was sold.
    public struct OfferDetails: Decodable, Sendable, Equatable {
        /// Present only when bought through an offer.
        public let offerId: String?
        public let purchaseOptionId: String?
        public let quantity: Int?
        /// The units not refunded (quantity-based partial refunds and full refunds taken off).
        public let refundableQuantity: Int?
        public let offerTags: [String]?
        /// `CONSUMPTION_STATE_YET_TO_BE_CONSUMED` or `CONSUMPTION_STATE_CONSUMED`.
        public let consumptionState: String?
        /// Present (an empty object) only for a rental: its period is the purchase option's (`OneTimeProduct`).
        public let rentOfferDetails: SubscriptionPurchaseV2.Marker?
        public let preorderOfferDetails: PreorderOfferDetails?
    }

    public struct PreorderOfferDetails: Decodable, Sendable, Equatable {
        public let preorderReleaseTime: Timestamp?

        private enum CodingKeys: String, CodingKey { case preorderReleaseTime }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            preorderReleaseTime = try c.decodeTimestampIfPresent(forKey: .preorderReleaseTime)
        }
    }

    private enum CodingKeys: String, CodingKey {
        case kind, productLineItem, purchaseStateContext, testPurchaseContext, orderId, obfuscatedExternalAccountId
        case obfuscatedExternalProfileId, regionCode, purchaseCompletionTime, acknowledgementState
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decodeIfPresent(String.self, forKey: .kind)
        productLineItem = try c.decodeIfPresent([LineItem].self, forKey: .productLineItem)
        purchaseStateContext = try c.decodeIfPresent(PurchaseStateContext.self, forKey: .purchaseStateContext)
        testPurchaseContext = try c.decodeIfPresent(TestPurchaseContext.self, forKey: .testPurchaseContext)
        orderId = try c.decodeIfPresent(String.self, forKey: .orderId)
        obfuscatedExternalAccountId = try c.decodeIfPresent(String.self, forKey: .obfuscatedExternalAccountId)
        obfuscatedExternalProfileId = try c.decodeIfPresent(String.self, forKey: .obfuscatedExternalProfileId)
        regionCode = try c.decodeIfPresent(String.self, forKey: .regionCode)
        purchaseCompletionTime = try c.decodeTimestampIfPresent(forKey: .purchaseCompletionTime)
        acknowledgementState = try c.decodeIfPresent(String.self, forKey: .acknowledgementState)
    }
}
