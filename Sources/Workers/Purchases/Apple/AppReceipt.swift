import Toolkit

/// A legacy app receipt (`appStoreReceipt`, base64 PKCS#7), read only for the transaction ids of its
/// in-app purchases: the App Store Server API is then asked about them, and its signed answers are what
/// is trusted. The receipt's own signature is not checked, since nothing in it is used as fact.
enum AppReceipt {
    /// Receipt field types (Apple's receipt fields): 17 is one in-app purchase receipt, whose own set
    /// holds 1703 (transaction_id) and 1705 (original_transaction_id).
    static let inAppPurchase = 17
    static let transactionId = 1703
    static let originalTransactionId = 1705

    /// Apple caps a receipt well below this; a bigger one is no receipt.
    static let maxBase64Bytes = 1 << 20

    enum Problem: Error, Equatable { case notBase64, notPKCS7, noPurchases }

    /// The transaction ids of the receipt's in-app purchases, in the receipt's order, without repeats.
    static func transactionIds(base64: String) throws(Problem) -> [String] {
        guard base64.utf8.count <= maxBase64Bytes, let der = Base64.decodeStandard(Substring(base64)) else { throw .notBase64 }
        guard let content = PKCS7Container.signedContent(der), let fields = PKCS7Container.attributes(content) else { throw .notPKCS7 }
        var ids: [String] = []
        for field in fields where field.type == inAppPurchase {
            guard let inApp = PKCS7Container.attributes(field.value) else { continue }
            for item in inApp where item.type == transactionId || item.type == originalTransactionId {
                if let id = PKCS7Container.string(item.value), !id.isEmpty, !ids.contains(id) { ids.append(id) }
            }
        }
        guard !ids.isEmpty else { throw .noPurchases }
        return ids
    }
}
