import Store

/// One user's product in an app and environment: the key of an entitlement and of its compacted topic
/// record. Production and sandbox purchases never count towards the same entitlement.
struct EntitlementKey: Hashable, Comparable {
    var app: String
    var environment: String
    var user: String
    var product: String

    /// The entitlement a purchase counts towards, if it names its user and product.
    static func of(_ purchase: Purchase) -> [EntitlementKey] {
        guard let user = purchase.user, let product = purchase.product else { return [] }
        return [EntitlementKey(app: purchase.key.app, environment: purchase.key.environment, user: user, product: product)]
    }

    static func < (a: EntitlementKey, b: EntitlementKey) -> Bool {
        (a.app, a.environment, a.user, a.product) < (b.app, b.environment, b.user, b.product)
    }

    /// The keys as four PostgreSQL arrays (app, environment, user, product), for
    /// `unnest($1::text[], $2::text[], $3::text[], $4::text[])`.
    static func arrays(_ keys: [EntitlementKey]) -> [SQLValue] {
        [.textArray(keys.map(\.app)), .textArray(keys.map(\.environment)), .textArray(keys.map(\.user)), .textArray(keys.map(\.product))]
    }
}
