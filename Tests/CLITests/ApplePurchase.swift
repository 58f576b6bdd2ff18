import Events
import Foundation
import Verifiers

/// One auto-renewable subscription of a fresh user (appAccountToken), and its App Store notifications
/// signed with the dev process's test chain, each with a notificationUUID of its own.
struct ApplePurchase: Sendable {
    let user = UUID().uuidString.lowercased()
    let originalTransactionId = String(UInt64.random(in: 100_000_000_000...999_999_999_999))
    let product: String
    let purchasedMs: Int64
    let expiresMs: Int64

    /// Bought now, renewing in 30 days.
    init(product: String = "pro.monthly") {
        self.product = product
        purchasedMs = Timestamp.now.millisecondsSince1970
        expiresMs = purchasedMs + 30 * 86_400_000
    }

    struct Notification: Sendable {
        /// `{"signedPayload":"<JWS>"}`
        var body: String
        var notificationUUID: String
        var eventId: String { "apple:\(notificationUUID)" }
    }

    func subscribed(chain: AppleTestChain) throws -> Notification {
        try notification("SUBSCRIBED", subtype: "INITIAL_BUY", status: 1, signedMs: purchasedMs, chain: chain)
    }

    /// Signed a second after the purchase: newer, so the projection lets it win.
    func expired(chain: AppleTestChain) throws -> Notification {
        try notification("EXPIRED", subtype: "VOLUNTARY", status: 2, signedMs: purchasedMs + 1_000, chain: chain)
    }

    private func notification(_ type: String, subtype: String, status: Int, signedMs: Int64, chain: AppleTestChain) throws -> Notification {
        let transaction = try chain.sign(AppleBodies.transaction(
            bundleId: DevProcess.bundleId, signedDate: signedMs, originalTransactionId: originalTransactionId,
            transactionId: originalTransactionId + "1", productId: product, purchaseDate: purchasedMs, expiresDate: expiresMs,
            appAccountToken: user))
        let uuid = UUID().uuidString.lowercased()
        let payload = AppleBodies.notification(type: type, subtype: subtype, bundleId: DevProcess.bundleId, signedDate: signedMs,
                                               transactionJWS: transaction, status: status, notificationUUID: uuid)
        return Notification(body: #"{"signedPayload":"\#(try chain.sign(payload))"}"#, notificationUUID: uuid)
    }
}
