import Entitlements
import Store
import Synchronization
import Toolkit

/// The opaque ids the merchant APIs and `tollgate.entitlements` name purchases by: an HMAC-SHA-256 of
/// the purchase's key under a server key kept in the store, so an id is stable across replicas and
/// restarts, says nothing of the purchase token or transaction id behind it, and cannot be turned back
/// into one (docs/security.md).
public struct PurchaseIds: Sendable {
    static let keyName = "purchase-ids"
    let key: [UInt8]

    init(key: [UInt8]) { self.key = key }


    /// `pur_` and 128 bits of the MAC, base64url.
    public func id(source: String, app: String, environment: String, subject: String) -> String {
        let mac = Digest.hmacSHA256(key: key, message: Array([source, app, environment, subject].joined(separator: "\u{0}").utf8))
        return "pur_" + Base64.encodeURL(Array(mac.prefix(16)))
    }

    /// `evt_` and 128 bits of a MAC of an event's `ce_id`, for what leaves Tollgate over HTTP (outbound
    /// webhooks): some ids carry a purchase token (a Google voided purchase's), and none need to leave as is.
    public func eventId(_ id: String) -> String {
        let mac = Digest.hmacSHA256(key: key, message: Array(("event\u{0}" + id).utf8))
        return "evt_" + Base64.encodeURL(Array(mac.prefix(16)))
    }

    public func id(of entitlement: Entitlement) -> String {
        id(source: entitlement.source, app: entitlement.app, environment: entitlement.environment, subject: entitlement.subject)
    }
}

/// The store's purchase-id key, read (or made) on first use and kept: the composition root starts
/// before it may reach the store, and every later id is a MAC, not a query.
public final class PurchaseIdSource: Sendable {
    private let store: EntitlementStore
    private let loaded = Mutex<PurchaseIds?>(nil)

    public init(store: EntitlementStore) { self.store = store }

    public func ids() async throws(StoreError) -> PurchaseIds {
        if let ids = loaded.withLock({ $0 }) { return ids }
        var generator = SystemRandomNumberGenerator()
        let candidate = Digest.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let ids = PurchaseIds(key: Array(try await store.serverKey(named: PurchaseIds.keyName, candidate: candidate).utf8))
        loaded.withLock { $0 = ids }
        return ids
    }
}
