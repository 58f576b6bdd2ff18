/// `POST /v1/purchases` and `POST /v1/validate` (docs/purchases.md).
public struct PurchaseSettings: Sendable {
    /// Who keeps a purchase that a second user reports.
    public enum Ownership: String, Sendable, CaseIterable {
        /// The new user gets it and the old one loses it (as store "restore purchases" works).
        case transfer
        /// The user holding it keeps it; the second claim is refused (409 `already_owned`).
        case keep
    }

    /// How long a request waits for the workers to apply its events before answering 202.
    public var waitMs = 5_000
    /// Per app (bundle id or package name); an app not listed transfers.
    public var ownership: [String: Ownership] = [:]
    /// Per app: the key `POST /v1/validate` accepts (in the validator URL's `?key=` or as a bearer token),
    /// for apps whose only configuration is that URL (cordova-plugin-purchase). Never logged.
    public var validatorKeys: [String: String] = [:]
    /// The longest legacy app receipt (`apple.receipt`, `appStoreReceipt`) accepted, in bytes of base64;
    /// a longer one is answered 413 before anything decodes it.
    public var maxReceiptBytes = 1 << 20
    /// PEM or DER files of the roots an app receipt's signer must chain to; empty: the Apple Inc. Root
    /// built into Tollgate. Read when the workers start.
    public var receiptRootCertificates: [String] = []

    public static let maxReceiptBytesRange = 16_384...8_388_608

    public init() {}

    public func ownership(of app: String) -> Ownership { ownership[app] ?? .transfer }
}

extension ConfigLoader {
    static func readPurchases(_ s: ConfigReader) throws(ConfigError) -> PurchaseSettings {
        var purchases = PurchaseSettings()
        purchases.waitMs = try s.int("waitMs", default: purchases.waitMs, range: 0...60_000)
        for (app, text) in try s.stringMap("ownership") {
            guard let policy = PurchaseSettings.Ownership(rawValue: text) else {
                throw ConfigError(key: s.name("ownership") + ".\(app)", message: "must be transfer or keep")
            }
            purchases.ownership[app] = policy
        }
        purchases.validatorKeys = try s.stringMap("validatorKeys")
        for (app, key) in purchases.validatorKeys where key.utf8.count < 16 {
            throw ConfigError(key: s.name("validatorKeys") + ".\(app)", message: "must be at least 16 characters (a random key)")
        }
        purchases.maxReceiptBytes = try s.int("maxReceiptBytes", default: purchases.maxReceiptBytes, range: PurchaseSettings.maxReceiptBytesRange)
        purchases.receiptRootCertificates = try s.paths("receiptRootCertificates")
        for (index, path) in purchases.receiptRootCertificates.enumerated() where path.isEmpty {
            throw ConfigError(key: s.name("receiptRootCertificates") + "[\(index)]", message: "is empty (a path to a PEM or DER certificate)")
        }
        return purchases
    }
}
