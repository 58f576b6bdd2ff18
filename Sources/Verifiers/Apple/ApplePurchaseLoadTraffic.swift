import Foundation
import Toolkit

/// `POST /v1/purchases` as an app calls it after a StoreKit 2 purchase: a signed transaction (ES256 JWS
/// with the x5c chain of `tollgate-load prepare`'s Apple identity) for a new user each time, so every
/// request verifies, publishes one event and waits for the workers to apply it. For `make bench`.
public struct ApplePurchaseLoadTraffic: LoadTraffic {
    public let checksPerRequest = 1
    public let algorithm: String? = "ES256"
    /// The bearer token `tollgate-load prepare` writes into the workers' configuration.
    public static let token = "bench-api-token-not-a-secret"

    let leafKey: PrivateKey
    let headerSegment: String
    let bundleId: String
    let now: Int64

    public init(directory: LoadDirectory) throws {
        leafKey = try PrivateKey(pem: try directory.read("leaf-key.pem")).orLoadError("Apple leaf key")
        let chain = try ["leaf.pem", "intermediate.pem", "root.pem"].map { name in
            Base64.encodeStandard(try Certificate.load(pemOrDER: Array(try directory.read(name).utf8)).orLoadError(name).der)
        }
        headerSegment = Base64.encodeURL(Array(#"{"alg":"ES256","x5c":["\#(chain.joined(separator: #"",""#))"]}"#.utf8))
        bundleId = try directory.read(json: AppleSender.LoadIdentity.self, "identity.json").bundleId
        now = Int64(Date().timeIntervalSince1970 * 1000)
    }

    public func request(_ index: Int, run: String) -> LoadRequest {
        let original = "\(run)\(index)"
        let expires = now + 30 * 86_400_000
        let payload = #"{"transactionId":"\#(original)1","originalTransactionId":"\#(original)","webOrderLineItemId":"\#(original)2","bundleId":"\#(bundleId)","productId":"pro.monthly","subscriptionGroupIdentifier":"21438902","purchaseDate":\#(now),"originalPurchaseDate":\#(now),"expiresDate":\#(expires),"quantity":1,"type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\#(now),"environment":"Production","transactionReason":"PURCHASE","storefront":"USA","storefrontId":"143441","price":4990,"currency":"USD","appTransactionId":"\#(original)3"}"#
        let input = headerSegment + "." + Base64.encodeURL(Array(payload.utf8))
        let jws = input + "." + Base64.encodeURL(leafKey.signES256(Array(input.utf8)) ?? [])
        return LoadRequest(path: "/v1/purchases",
                           headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(Self.token)")],
                           body: Array(#"{"app":"\#(bundleId)","user":"bench-user-\#(original)","apple":{"signedTransaction":"\#(jws)"}}"#.utf8))
    }
}
