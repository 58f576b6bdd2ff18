import Store

/// One user's product in an app: the key of an entitlement and of its compacted topic record.
struct EntitlementKey: Hashable, Comparable {
    var app: String
    var user: String
    var product: String

    /// The entitlement a purchase counts towards, if it names its user and product.
    static func of(_ purchase: Purchase) -> [EntitlementKey] {
        guard let user = purchase.user, let product = purchase.product else { return [] }
        return [EntitlementKey(app: purchase.key.app, user: user, product: product)]
    }

    static func < (a: EntitlementKey, b: EntitlementKey) -> Bool {
        (a.app, a.user, a.product) < (b.app, b.user, b.product)
    }

    /// The keys as three PostgreSQL arrays (app, user, product), for `unnest($1::text[], $2::text[], $3::text[])`.
    static func arrays(_ keys: [EntitlementKey]) -> [SQLValue] {
        [.textArray(keys.map(\.app)), .textArray(keys.map(\.user)), .textArray(keys.map(\.product))]
    }
}
