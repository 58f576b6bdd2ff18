import Events
import Toolkit
import Verifiers

/// A legacy app receipt (`appStoreReceipt`, base64 PKCS#7), believed only once verified as Apple's
/// "Validating receipts on the device" describes: the PKCS#7 signature over the exact content bytes,
/// the signer's chain to a configured root (the Apple Inc. Root by default) through the intermediates
/// the receipt carries, Apple's receipt-signing marker on the signer, and the receipt's bundle id the
/// app's. Only then are its in-app transaction ids read; the App Store Server API is asked about the
/// first, and its signed answers state the purchases.
public final class AppReceiptVerifier: Sendable {
    /// Receipt field types (Apple's receipt fields): 2 the bundle id (UTF8String), 12 the creation date
    /// (RFC 3339 IA5String), 17 one in-app purchase receipt, whose own set holds 1703
    /// (transaction_id) and 1705 (original_transaction_id).
    static let bundleIdField = 2
    static let creationDateField = 12
    static let inAppPurchase = 17
    static let transactionId = 1703
    static let originalTransactionId = 1705
    /// Apple's marker on its receipt-signing certificate. Every Apple developer holds certificates that
    /// chain through WWDR to the same Apple Inc. Root, so the chain alone would believe a receipt signed
    /// with one of those.
    static let receiptSigningOID = AppleChainVerifier.leafOID

    enum Problem: Error, Equatable {
        /// Longer than `purchases.maxReceiptBytes`.
        case tooLarge
        case notBase64
        /// Not a PKCS#7 app receipt: the text says what is wrong, never what the receipt holds.
        case malformed(String)
        case badSignature
        /// The signer does not chain to a configured root; OpenSSL's reason.
        case untrusted(String)
        /// A certificate of the chain is not valid at the receipt's creation date.
        case expired
        case notReceiptSigner
        /// Signed by Apple, for another app than the one asked about.
        case otherApp
        case noPurchases
    }

    /// Apple's receipts carry three (receipt signing, WWDR, Apple Inc. Root); more is no receipt of theirs.
    static let maxCertificates = 8

    let trustStore: TrustStore
    /// The longest receipt accepted, in bytes of base64 (`purchases.maxReceiptBytes`).
    let maxBase64Bytes: Int

    /// Nil when OpenSSL cannot make the store.
    public init?(roots: [Certificate], maxBase64Bytes: Int) {
        guard let trustStore = TrustStore(roots: roots) else { return nil }
        self.trustStore = trustStore
        self.maxBase64Bytes = maxBase64Bytes
    }

    /// Attribute elements walked at most, the receipt's and its in-app purchases' together: one per 16
    /// bytes of base64, as tight as Apple's attributes pack (type, version and value: 12 bytes of DER at
    /// the least).
    var maxFields: Int { maxBase64Bytes / 16 }

    /// The transaction ids of a verified receipt's in-app purchases, in the receipt's order, without
    /// repeats, once the receipt is shown to be Apple's for `bundleId`.
    func transactionIds(base64: String, bundleId: String) throws(Problem) -> [String] {
        guard base64.utf8.count <= maxBase64Bytes else { throw .tooLarge }
        guard let der = Base64.decodeStandard(base64) else { throw .notBase64 }
        let signed: PKCS7Container.VerifiedSignedData
        switch PKCS7Container.verifiedSignedData(der, maxCertificates: Self.maxCertificates) {
        case .success(let verified): signed = verified
        case .failure(.badSignature): throw .badSignature
        case .failure(.malformed(let why)): throw .malformed(why)
        }
        var budget = maxFields
        let fields = try attributes(signed.content, budget: &budget)
        let createdAt = try creationDate(in: fields)
        try checkSigner(signed, at: createdAt)
        guard try field(Self.bundleIdField, in: fields) == bundleId else { throw .otherApp }

        var ids: [String] = []
        var seen: Set<String> = []
        for field in fields where field.type == Self.inAppPurchase {
            for item in try attributes(field.value, budget: &budget)
            where item.type == Self.transactionId || item.type == Self.originalTransactionId {
                if let id = PKCS7Container.string(item.value), !id.isEmpty, seen.insert(id).inserted { ids.append(id) }
            }
        }
        guard !ids.isEmpty else { throw .noPurchases }
        return ids
    }

    /// The signer's chain to a configured root, checked at the receipt's creation date rather than now:
    /// a receipt outlives the WWDR intermediate that signed it (the one Apple used until 2023 expired in
    /// February 2023, and the receipts it signed are still Apple's). The date is inside the signed
    /// content, so only the signer could have chosen it.
    private func checkSigner(_ signed: PKCS7Container.VerifiedSignedData, at time: Int64) throws(Problem) {
        switch trustStore.verify(leaf: signed.signer, intermediates: signed.otherCertificates, at: time, strict: false) {
        case .success: break
        case .failure(.expired): throw .expired
        case .failure(.untrusted(let why)): throw .untrusted(why)
        }
        guard signed.signer.hasExtension(oid: Self.receiptSigningOID) else { throw .notReceiptSigner }
    }

    /// Seconds since 1970 of the receipt's creation date (field 12), which must be there once.
    private func creationDate(in fields: [PKCS7Container.Attribute]) throws(Problem) -> Int64 {
        guard let text = try field(Self.creationDateField, in: fields), let date = Timestamp(rfc3339: text) else {
            throw .malformed("no RFC 3339 creation date (field 12)")
        }
        return date.millisecondsSince1970 / 1_000
    }

    /// The text of a field that appears at most once.
    private func field(_ type: Int, in fields: [PKCS7Container.Attribute]) throws(Problem) -> String? {
        let found = fields.filter { $0.type == type }
        guard found.count <= 1 else { throw .malformed("field \(type) appears more than once") }
        guard let value = found.first else { return nil }
        guard let text = PKCS7Container.string(value.value) else { throw .malformed("field \(type) is not a string") }
        return text
    }

    private func attributes(_ der: [UInt8], budget: inout Int) throws(Problem) -> [PKCS7Container.Attribute] {
        switch PKCS7Container.attributes(der, budget: &budget) {
        case .success(let found): return found
        case .failure(.notASet): throw .malformed("the content is not a set of receipt attributes")
        case .failure(.tooManyElements): throw .malformed("more than \(maxFields) receipt attributes")
        }
    }
}
