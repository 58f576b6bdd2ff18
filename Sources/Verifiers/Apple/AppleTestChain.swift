import Config
import Events
import Foundation
import Toolkit

/// A root -> intermediate -> leaf chain generated with OpenSSL for each test, shaped like Apple's,
/// and a signer for notifications and nested JWS. Shared by the verifier tests and the CLI tests
/// (which write `root` to a PEM file for `sources.apple.roots`).
public struct AppleTestChain: Sendable {
    public static let y2020: Int64 = 1_577_836_800
    public static let y2040: Int64 = 2_208_988_800

    public let rootKey: PrivateKey
    public let root: Certificate
    public let intermediateKey: PrivateKey
    public let intermediate: Certificate
    public let leafKey: PrivateKey
    public let leaf: Certificate

    /// The chain's keys: fresh P-256 ones, as Apple's StoreKit 2 chain has, unless a test passes
    /// others (RSA, as Apple's receipt chain has, made once and shared since RSA keys are slow to make).
    public struct Keys: Sendable {
        public let root: PrivateKey
        public let intermediate: PrivateKey
        public let leaf: PrivateKey

        public init(root: PrivateKey, intermediate: PrivateKey, leaf: PrivateKey) {
            self.root = root
            self.intermediate = intermediate
            self.leaf = leaf
        }

        public static func p256() throws -> Keys {
            Keys(root: try required(PrivateKey.generateP256()), intermediate: try required(PrivateKey.generateP256()),
                 leaf: try required(PrivateKey.generateP256()))
        }

        /// RSA 2048, as the Apple Inc. Root, WWDR and receipt-signing certificates are.
        public static func rsa() throws -> Keys {
            Keys(root: try required(PrivateKey.generateRSA()), intermediate: try required(PrivateKey.generateRSA()),
                 leaf: try required(PrivateKey.generateRSA()))
        }
    }

    public struct Options: Sendable {
        public var leafValidity: ClosedRange<Int64> = y2020...y2040
        /// Apple's WWDR intermediates expire before receipts they signed stop mattering.
        public var intermediateValidity: ClosedRange<Int64> = y2020...y2040
        /// Nil: fresh P-256 keys.
        public var keys: Keys?
        public var leafOID = AppleChainVerifier.leafOID
        public var intermediateOID = AppleChainVerifier.intermediateOID
        /// Apple's own test chain has no AKI/SKI.
        public var keyIdentifiers = true
        /// OCSP responder URLs for the AIA extension (online checks).
        public var leafOCSP: String?
        public var intermediateOCSP: String?

        public init() {}
    }

    public init(_ options: Options = Options()) throws {
        let keys = try options.keys ?? Keys.p256()
        rootKey = keys.root
        var rootBuilder = CertificateBuilder(subject: "Test Root CA", notBefore: Self.y2020, notAfter: Self.y2040)
        rootBuilder.isCA = true
        rootBuilder.keyIdentifiers = options.keyIdentifiers
        root = try required(rootBuilder.issue(key: rootKey, issuer: nil, issuerKey: rootKey))

        intermediateKey = keys.intermediate
        var intermediateBuilder = CertificateBuilder(subject: "Test WWDR", notBefore: options.intermediateValidity.lowerBound,
                                                     notAfter: options.intermediateValidity.upperBound)
        intermediateBuilder.isCA = true
        intermediateBuilder.serial = 2
        intermediateBuilder.keyIdentifiers = options.keyIdentifiers
        intermediateBuilder.markerOIDs = [options.intermediateOID]
        intermediateBuilder.ocspResponder = options.intermediateOCSP
        intermediate = try required(intermediateBuilder.issue(key: intermediateKey, issuer: root, issuerKey: rootKey))

        leafKey = keys.leaf
        var leafBuilder = CertificateBuilder(subject: "Test Leaf", notBefore: options.leafValidity.lowerBound,
                                             notAfter: options.leafValidity.upperBound)
        leafBuilder.serial = 3
        leafBuilder.keyIdentifiers = options.keyIdentifiers
        leafBuilder.markerOIDs = [options.leafOID]
        leafBuilder.ocspResponder = options.leafOCSP
        leaf = try required(leafBuilder.issue(key: leafKey, issuer: intermediate, issuerKey: intermediateKey))
    }

    /// A different certificate with the root's subject and key (like Apple's test vector x5c[2]).
    public func lookalikeRoot() throws -> Certificate {
        var builder = CertificateBuilder(subject: "Test Root CA", notBefore: Self.y2020, notAfter: Self.y2040)
        builder.isCA = true
        builder.serial = 99
        return try required(builder.issue(key: rootKey, issuer: nil, issuerKey: rootKey))
    }

    public var x5c: [String] { [leaf, intermediate, root].map { Base64.encodeStandard($0.der) } }

    /// A compact JWS over `payload` with the given header fields.
    public func sign(_ payload: String, alg: String? = "ES256", x5c: [String]? = nil, key: PrivateKey? = nil) throws -> String {
        var header: [String: Any] = ["x5c": x5c ?? self.x5c]
        if let alg { header["alg"] = alg }
        let headerData = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let input = Base64.encodeURL(Array(headerData)) + "." + Base64.encodeURL(Array(payload.utf8))
        let signature = try required((key ?? leafKey).signES256(Array(input.utf8)))
        return input + "." + Base64.encodeURL(signature)
    }

    public func source(apps: [AppleSettings.App] = AppleTestChain.apps, roots: [Certificate]? = nil,
                       verifyNested: Bool = true, strict: Bool = false) -> AppleSource {
        AppleSource(apps: apps, roots: roots ?? [root], verifyNested: verifyNested, strict: strict)
    }

    public static let apps = [AppleSettings.App(bundleId: "com.example", appAppleId: 1234, environments: ["Production", "Sandbox"])]
}

/// Notification and nested payload JSON in Apple's shapes; the defaults are the verifier tests' fixed
/// values, the CLI tests pass their own ids and dates (unique deliveries, expiry in the future).
public enum AppleBodies {
    public static let signedDate: Int64 = 1_700_000_000_000 // 2023-11-14T22:13:20Z

    public static func transaction(environment: String = "Sandbox", bundleId: String = "com.example", signedDate: Int64 = signedDate,
                                   originalTransactionId: String = "1000", transactionId: String = "1001",
                                   productId: String = "pro.monthly", purchaseDate: Int64 = 1_699_990_000_000,
                                   expiresDate: Int64 = 1_702_582_000_000,
                                   appAccountToken: String? = "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                                   type: String = "Auto-Renewable Subscription", revocationDate: Int64? = nil) -> String {
        let account = appAccountToken.map { #","appAccountToken":"\#($0)""# } ?? ""
        let expires = type == "Auto-Renewable Subscription" ? #","expiresDate":\#(expiresDate)"# : ""
        let revoked = revocationDate.map { #","revocationDate":\#($0),"revocationReason":0"# } ?? ""
        return #"{"originalTransactionId":"\#(originalTransactionId)","transactionId":"\#(transactionId)","bundleId":"\#(bundleId)","productId":"\#(productId)","purchaseDate":\#(purchaseDate)\#(expires),"quantity":1,"type":"\#(type)"\#(account),"signedDate":\#(signedDate),"environment":"\#(environment)","currency":"USD","price":4990\#(revoked)}"#
    }

    public static func renewal(environment: String = "Sandbox", originalTransactionId: String = "1000", productId: String = "pro.monthly",
                               signedDate: Int64 = signedDate, autoRenewStatus: Int = 1) -> String {
        #"{"originalTransactionId":"\#(originalTransactionId)","productId":"\#(productId)","autoRenewStatus":\#(autoRenewStatus),"isInBillingRetryPeriod":false,"signedDate":\#(signedDate),"environment":"\#(environment)"}"#
    }

    public static func notification(type: String = "DID_RENEW", subtype: String? = nil, environment: String = "Sandbox",
                                    bundleId: String = "com.example", appAppleId: Int64? = 1234, signedDate: Int64? = signedDate,
                                    transactionJWS: String? = nil, renewalJWS: String? = nil, status: Int? = 1,
                                    notificationUUID: String = "0b7a1b2c-3d4e-5f60-7182-93a4b5c6d7e8") -> String {
        var data = [#""bundleId":"\#(bundleId)""#, #""environment":"\#(environment)""#]
        if let appAppleId { data.append(#""appAppleId":\#(appAppleId)"#) }
        if let transactionJWS { data.append(#""signedTransactionInfo":"\#(transactionJWS)""#) }
        if let renewalJWS { data.append(#""signedRenewalInfo":"\#(renewalJWS)""#) }
        if let status { data.append(#""status":\#(status)"#) }
        var fields = [#""notificationType":"\#(type)""#, #""notificationUUID":"\#(notificationUUID)""#,
                      #""version":"2.0""#, #""data":{\#(data.joined(separator: ","))}"#]
        if let subtype { fields.append(#""subtype":"\#(subtype)""#) }
        if let signedDate { fields.append(#""signedDate":\#(signedDate)"#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    public static func request(_ jws: String, now: Timestamp = Timestamp(rfc3339: "2026-11-21T12:00:00Z")!) -> WebhookRequest {
        WebhookRequest(path: "/webhooks/apple", headers: HeaderFields([("Content-Type", "application/json")]),
                       body: Array(#"{"signedPayload":"\#(jws)"}"#.utf8), receivedAt: now)
    }
}

/// OpenSSL gave no key, certificate or signature.
public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
}

/// The value, or a `FixtureError` naming where it was missing (what `#require` did before this left the test target).
func required<T>(_ value: T?, _ file: StaticString = #fileID, _ line: UInt = #line) throws -> T {
    guard let value else { throw FixtureError(description: "OpenSSL returned nothing at \(file):\(line)") }
    return value
}
