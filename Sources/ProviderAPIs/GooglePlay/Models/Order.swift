import Events

/// An order as `orders.get` answers it (https://developers.google.com/android-publisher/api-ref/rest/v3/orders),
/// read for what a refund review's answer needs: the purchase it paid for and, for a subscription, the
/// service period it paid. Other fields are ignored.
public struct Order: Decodable, Sendable, Equatable {
    public let orderId: String?
    public let purchaseToken: String?
    /// `PROCESSED`, `PENDING`, `CANCELED`, `PENDING_REFUND`, `PARTIALLY_REFUNDED`, `REFUNDED`...
    public let state: String?
    public let createTime: Timestamp?
    public let lineItems: [LineItem]?

    public struct LineItem: Decodable, Sendable, Equatable {
        public let productId: String?
        public let subscriptionDetails: SubscriptionDetails?
    }

    public struct SubscriptionDetails: Decodable, Sendable, Equatable {
        public let servicePeriodStartTime: Timestamp?
        public let servicePeriodEndTime: Timestamp?

        private enum CodingKeys: String, CodingKey { case servicePeriodStartTime, servicePeriodEndTime }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            servicePeriodStartTime = try c.decodeTimestampIfPresent(forKey: .servicePeriodStartTime)
            servicePeriodEndTime = try c.decodeTimestampIfPresent(forKey: .servicePeriodEndTime)
        }
    }

    private enum CodingKeys: String, CodingKey { case orderId, purchaseToken, state, createTime, lineItems }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        orderId = try c.decodeIfPresent(String.self, forKey: .orderId)
        purchaseToken = try c.decodeIfPresent(String.self, forKey: .purchaseToken)
        state = try c.decodeIfPresent(String.self, forKey: .state)
        createTime = try c.decodeTimestampIfPresent(forKey: .createTime)
        lineItems = try c.decodeIfPresent([LineItem].self, forKey: .lineItems)
    }
}

/// `OrdersReviewRefundRequest`: the developer's view of a chargeback Google reviews.
public struct RefundReviewAnswer: Encodable, Sendable, Equatable {
    /// `DECLINE`, `APPROVE`, `NEUTRAL`.
    public enum Preference: String, Encodable, Sendable, CaseIterable { case decline = "DECLINE", approve = "APPROVE", neutral = "NEUTRAL" }

    public var pendingRefundToken: String
    public var refundPreference: Preference
    /// Whether the app offered a free sample, trial or description of the content before purchase.
    public var sampleContentProvided: Bool
    /// 0 to 100,000 (45200 is 45.2%): how much of the purchase the customer used; left out when not known.
    public var consumptionPercentageMilliunits: Int?

    public init(pendingRefundToken: String, refundPreference: Preference, sampleContentProvided: Bool, consumptionPercentageMilliunits: Int?) {
        self.pendingRefundToken = pendingRefundToken
        self.refundPreference = refundPreference
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentageMilliunits = consumptionPercentageMilliunits
    }
}
