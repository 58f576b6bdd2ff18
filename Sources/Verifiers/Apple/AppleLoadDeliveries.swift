import Foundation

extension AppleTestChain {
    /// The `index`th of a run's unique, signed DID_RENEW notifications for `bundleId`: its ce_id
    /// (`apple:<notificationUUID>`) and the body Apple would post. Each has its own purchase, so
    /// deliveries spread over every partition.
    public func loadDelivery(_ index: Int, run: String, bundleId: String) throws -> (id: String, body: String) {
        let uuid = UUID().uuidString.lowercased()
        let transaction = try sign(AppleBodies.transaction(bundleId: bundleId, originalTransactionId: "\(run)-\(index)",
                                                            transactionId: "\(run)-\(index)-t"))
        let notification = AppleBodies.notification(bundleId: bundleId, transactionJWS: transaction, notificationUUID: uuid)
        return ("apple:\(uuid)", #"{"signedPayload":"\#(try sign(notification))"}"#)
    }
}
