import Foundation
import Toolkit

extension AppleSender {
    struct LoadIdentity: Codable {
        var bundleId = "com.example.bench"
        var appAppleId: Int64 = 1_234_567_890
    }

    /// A generated Apple-shaped chain; the gateway trusts its root.
    public static func prepareLoad(in directory: LoadDirectory) throws -> String? {
        let chain = try AppleTestChain()
        try directory.write(chain.root.pem, "root.pem")
        try directory.write(chain.intermediate.pem, "intermediate.pem")
        try directory.write(chain.leaf.pem, "leaf.pem")
        try directory.write(try chain.leafKey.pem.orLoadError("Apple leaf key PEM"), "leaf-key.pem")
        let identity = LoadIdentity()
        try directory.write(json: identity, "identity.json")
        return #"{ roots: ["\#(directory.file("root.pem"))"], apps: [{ bundleId: \#(identity.bundleId), appAppleId: \#(identity.appAppleId), environments: [Production] }] }"#
    }

    public static func loadTraffic(from directory: LoadDirectory) throws -> (any LoadTraffic)? {
        try AppleLoadTraffic(directory: directory)
    }
}

/// App Store Server Notifications V2 as Apple sends them: a DID_RENEW whose signed payload nests a
/// signed transaction and a signed renewal info, all three ES256 JWS carrying the same x5c chain.
/// Each delivery renews its own subscription, so ids and Kafka keys differ.
struct AppleLoadTraffic: LoadTraffic {
    let checksPerRequest = 3
    let algorithm: String? = "ES256"

    let leafKey: PrivateKey
    /// The base64url JWS header with `alg` and `x5c`, the same for every JWS.
    let headerSegment: String
    let bundleId: String
    let appAppleId: Int64
    let now: Int64

    init(directory: LoadDirectory) throws {
        leafKey = try PrivateKey(pem: try directory.read("leaf-key.pem")).orLoadError("Apple leaf key")
        let chain = try ["leaf.pem", "intermediate.pem", "root.pem"].map { name in
            Base64.encodeStandard(try Certificate.load(pemOrDER: Array(try directory.read(name).utf8)).orLoadError(name).der)
        }
        let identity = try directory.read(json: AppleSender.LoadIdentity.self, "identity.json")
        headerSegment = Base64.encodeURL(Array(#"{"alg":"ES256","x5c":["\#(chain.joined(separator: #"",""#))"]}"#.utf8))
        bundleId = identity.bundleId
        appAppleId = identity.appAppleId
        now = Int64(Date().timeIntervalSince1970 * 1000)
    }

    func request(_ index: Int, run: String) -> LoadRequest {
        let original = "\(run)\(index)"
        let purchase = now - 30 * 86_400_000, expires = now + 30 * 86_400_000
        let transaction = sign(#"{"transactionId":"\#(original)1","originalTransactionId":"\#(original)","webOrderLineItemId":"\#(original)2","bundleId":"\#(bundleId)","productId":"pro.monthly","subscriptionGroupIdentifier":"21438902","purchaseDate":\#(now),"originalPurchaseDate":\#(purchase),"expiresDate":\#(expires),"quantity":1,"type":"Auto-Renewable Subscription","appAccountToken":"\#(uuid(index, run))","inAppOwnershipType":"PURCHASED","signedDate":\#(now),"environment":"Production","transactionReason":"RENEWAL","storefront":"USA","storefrontId":"143441","price":4990,"currency":"USD","appTransactionId":"\#(original)3"}"#)
        let renewal = sign(#"{"originalTransactionId":"\#(original)","autoRenewProductId":"pro.monthly","productId":"pro.monthly","autoRenewStatus":1,"renewalPrice":4990,"currency":"USD","signedDate":\#(now),"environment":"Production","recentSubscriptionStartDate":\#(purchase),"renewalDate":\#(expires),"appTransactionId":"\#(original)3"}"#)
        let notification = sign(#"{"notificationType":"DID_RENEW","notificationUUID":"\#(uuid(index, run))","data":{"appAppleId":\#(appAppleId),"bundleId":"\#(bundleId)","bundleVersion":"42","environment":"Production","signedTransactionInfo":"\#(transaction)","signedRenewalInfo":"\#(renewal)","status":1},"version":"2.0","signedDate":\#(now)}"#)
        return LoadRequest(path: "/webhooks/apple", headers: [("Content-Type", "application/json"), ("User-Agent", "AppStore/1.0")],
                            body: Array(#"{"signedPayload":"\#(notification)"}"#.utf8))
    }

    private func sign(_ payload: String) -> String {
        let input = headerSegment + "." + Base64.encodeURL(Array(payload.utf8))
        // A failed signature makes a delivery the gateway refuses, which the run reports as an error.
        return input + "." + Base64.encodeURL(leafKey.signES256(Array(input.utf8)) ?? [])
    }

    /// A UUID-shaped id unique to the delivery and the run (`run` is 8 hex digits).
    private func uuid(_ index: Int, _ run: String) -> String {
        let hex = String(index, radix: 16)
        return run + "-4a59-4e8d-9c7b-" + String(repeating: "0", count: max(0, 12 - hex.count)) + hex
    }
}
