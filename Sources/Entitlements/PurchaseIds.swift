import Toolkit

/// The opaque ids the merchant APIs and `tollgate.entitlements` name purchases by: an HMAC-SHA-256 of
/// the purchase's key under a server key kept in the store, so an id is stable across replicas and
/// restarts, says nothing of the purchase token or transaction id behind it, and cannot be turned back
/// into one (docs/security.md). The store keeps each purchase's id beside it (migration 17), so a
/// route that names a purchase by its id finds it.
public struct PurchaseIds: Sendable {
    static let keyName = "purchase-ids"
    let key: [UInt8]

    public init(key: [UInt8]) { self.key = key }

    /// `pur_` and 128 bits of the MAC, base64url.
    public func id(source: String, app: String, environment: String, subject: String) -> String {
        let mac = Digest.hmacSHA256(key: key, message: Array([source, app, environment, subject].joined(separator: "\u{0}").utf8))
        return "pur_" + Base64.encodeURL(Array(mac.prefix(16)))
    }

    public func id(of key: PurchaseKey) -> String {
        id(source: key.source, app: key.app, environment: key.environment, subject: key.subject)
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

    /// Whether `text` has the shape of an id (`pur_` and 22 base64url characters): anything else is no purchase's.
    public static func isWellFormed(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count == 26, text.hasPrefix("pur_") else { return false }
        return utf8[4...].allSatisfy { $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }
}
