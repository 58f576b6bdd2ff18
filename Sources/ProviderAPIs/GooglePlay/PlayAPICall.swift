/// Which Play endpoint a request went to: the `call` dimension of the metrics, and part of every error.
public enum PlayAPICall: String, Sendable, Hashable {
    /// The OAuth 2.0 token endpoint.
    case token
    /// `purchases.subscriptionsv2.get`.
    case subscription
    /// `purchases.productsv2.getproductpurchasev2`.
    case product
    /// `monetization.onetimeproducts.get` (a rental's period).
    case oneTimeProduct = "one_time_product"
    /// `orders.get`.
    case order
    /// `orders.reviewrefund`.
    case reviewRefund = "review_refund"
    /// `purchases.voidedpurchases.list`.
    case voidedPurchases = "voided_purchases"
    /// `purchases.subscriptions.acknowledge`.
    case acknowledgeSubscription = "acknowledge_subscription"
    /// `purchases.products.acknowledge`.
    case acknowledgeProduct = "acknowledge_product"
}
