/// Which Play endpoint a request went to: the `call` dimension of the metrics, and part of every error.
public enum PlayAPICall: String, Sendable, Hashable {
    /// The OAuth 2.0 token endpoint.
    case token
    /// `purchases.subscriptionsv2.get`.
    case subscription
    /// `purchases.products.get`.
    case product
    /// `purchases.voidedpurchases.list`.
    case voidedPurchases = "voided_purchases"
    /// `purchases.subscriptions.acknowledge`.
    case acknowledgeSubscription = "acknowledge_subscription"
    /// `purchases.products.acknowledge`.
    case acknowledgeProduct = "acknowledge_product"
}
