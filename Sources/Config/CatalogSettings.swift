import Events

/// `catalog`: what each app sells (docs/catalog.md). A checkout names a catalog product and a currency
/// and its amount comes from here, never from the caller; Sileo packages take their prices from it; the
/// entitlement API and `tollgate.entitlements` name the entitlements (access levels such as `pro`) a
/// product grants.
public struct CatalogSettings: Sendable, Equatable {
    public var apps: [App] = []
    public init(apps: [App] = []) { self.apps = apps }

    /// One app as the merchant thinks of it, under every id Tollgate keeps its purchases by.
    public struct App: Sendable, Equatable {
        public var name: String
        /// Bundle id, package name, Alipay+ client id, Citcon account, Iaptic app: each belongs to one app.
        public var ids: [String]
        public var products: [Product]
        public init(name: String, ids: [String], products: [Product]) { self.name = name; self.ids = ids; self.products = products }
    }

    public struct Product: Sendable, Equatable {
        /// What checkouts, Sileo packages and entitlements name the product by.
        public var id: String
        /// The App Store product id, when it differs from `id`.
        public var apple: String?
        /// The Play product or subscription id, when it differs from `id`.
        public var google: String?
        /// Minor units (cents) per ISO 4217 currency, for checkouts; none: not sold through checkouts.
        public var pricesMinor: [String: Int64]
        /// The access levels it grants (`pro`); none: only the product itself.
        public var entitlements: [String]
        public init(id: String, apple: String? = nil, google: String? = nil, pricesMinor: [String: Int64] = [:], entitlements: [String] = []) {
            self.id = id; self.apple = apple; self.google = google; self.pricesMinor = pricesMinor; self.entitlements = entitlements
        }

        /// Whether a purchase of `source` (`apple`, `google`, a provider) that names `product` is this one: a
        /// store's own id counts only for that store's purchases, so a cheap product of one store can never
        /// pass for another store's expensive one.
        public func isNamed(_ product: String, source: String) -> Bool {
            switch source {
            case "apple": product.isExactly(apple ?? id)
            case "google": product.isExactly(google ?? id)
            default: product.isExactly(id)
            }
        }
    }

    /// The catalog app one of whose ids is `app`.
    public func app(_ app: String) -> App? { apps.first { $0.ids.contains(app) } }

    /// The product a checkout for `app` names by its catalog id.
    public func product(app: String, id: String) -> Product? { self.app(app)?.products.first { $0.id == id } }

    /// The entitlements a purchase from `source` of `product` (as that store names it) grants in `app`;
    /// empty when the catalog does not know it.
    public func entitlements(app: String, source: String, product: String) -> [String] {
        self.app(app)?.products.first { $0.isNamed(product, source: source) }?.entitlements ?? []
    }
}
