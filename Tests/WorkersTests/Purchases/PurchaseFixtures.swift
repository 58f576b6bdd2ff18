import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Outbound
import Synchronization
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Apple's side of the purchases tests: the chain it signs with, its App Store Server API (a local
/// server answering as Apple documents, checking the JWT), and the transactions it signs.
struct ApplePurchases {
    static let bundleId = "com.example"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"
    static let token = "purchases-test-token"
    static let day: Int64 = 86_400_000
    static let app = AppleSettings.App(bundleId: bundleId, appAppleId: 1234, environments: ["Production", "Sandbox"])

    let chain: AppleTestChain
    /// What legacy receipts are signed with: RSA, as Apple's receipt chain is (Apple Inc. Root, WWDR,
    /// receipt signing), its root the one the verifier is configured with for receipts.
    let receiptChain: AppleTestChain
    let fake: FakeAppStoreAPI
    let client: AppStoreAPIClient

    init() throws {
        let key = try #require(PrivateKey.generateP256())
        fake = FakeAppStoreAPI(publicKey: try #require(key.publicKey), issuerId: Self.issuerId, keyId: Self.keyId, bundleId: Self.bundleId)
        let credentials = try AppStoreAPICredentials(issuerId: Self.issuerId, keyId: Self.keyId, bundleId: Self.bundleId, privateKey: key)
        client = AppStoreAPIClient(credentials: credentials, baseURLs: .init(production: fake.productionURL, sandbox: fake.sandboxURL),
                                   fetcher: HTTPClientFetcher(), timeout: .seconds(5), logger: Self.logger)
        chain = try AppleTestChain()
        receiptChain = try Self.receiptChain()
    }

    /// RSA keys take a while to make: one set serves every test's receipt chains, another chains that
    /// lead to a root nobody configured.
    static let receiptKeys = try? AppleTestChain.Keys.rsa()
    static let otherReceiptKeys = try? AppleTestChain.Keys.rsa()

    /// A receipt chain of `receiptKeys` (or `other`'s, to another root) with the WWDR-like intermediate
    /// valid over `intermediateValidity`.
    static func receiptChain(other: Bool = false, leafOID: String = AppReceiptVerifier.receiptSigningOID,
                             intermediateValidity: ClosedRange<Int64> = AppleTestChain.y2020...AppleTestChain.y2040) throws -> AppleTestChain {
        var options = AppleTestChain.Options()
        options.keys = try #require(other ? otherReceiptKeys : receiptKeys)
        options.leafOID = leafOID
        options.intermediateValidity = intermediateValidity
        return try AppleTestChain(options)
    }

    func stop() { fake.stop() }

    static var logger: Logger {
        var logger = Logger(label: "purchases-test")
        logger.logLevel = .critical
        return logger
    }

    /// What the workers verify claims with: this chain as the configured root, `receiptChain`'s root as
    /// the one receipt root, this API's client.
    func setup(ownership: [String: PurchaseSettings.Ownership] = [:], waitMs: Int = 60_000,
               otherApps: [AppleSettings.App] = []) throws -> EntitlementWorkers.PurchasesSetup {
        var settings = PurchaseSettings()
        settings.ownership = ownership
        settings.waitMs = waitMs
        let receipts = try #require(AppReceiptVerifier(roots: [receiptChain.root], maxBase64Bytes: settings.maxReceiptBytes))
        let verifier = ApplePurchaseVerifier(source: chain.source(apps: [Self.app] + otherApps), clients: [Self.bundleId: client], receipts: receipts,
                                             logger: Self.logger)
        return EntitlementWorkers.PurchasesSetup(verifiers: [verifier], settings: settings)
    }

    /// A subscription transaction as StoreKit 2 signs it; no `appAccountToken` unless given.
    func transaction(_ original: String, transactionId: String? = nil, environment: String = "Production", signedAgoMs: Int64 = 60_000,
                     expiresInMs: Int64 = 30 * day, appAccountToken: String? = nil, type: String = "Auto-Renewable Subscription",
                     productId: String = "pro.monthly", revokedAgoMs: Int64? = nil, signer: AppleTestChain? = nil,
                     bundleId: String = Self.bundleId) throws -> String {
        let now = Timestamp.now.millisecondsSince1970
        return try (signer ?? chain).sign(AppleBodies.transaction(
            environment: environment, bundleId: bundleId, signedDate: now - signedAgoMs, originalTransactionId: original,
            transactionId: transactionId ?? original, productId: productId, purchaseDate: now - 2 * 60_000, expiresDate: now + expiresInMs,
            appAccountToken: appAccountToken, type: type, revocationDate: revokedAgoMs.map { now - $0 }))
    }

    /// A notification of `type` for `transactionJWS`, signed now.
    func notification(_ type: String, subtype: String? = nil, transactionJWS: String, environment: String = "Production") throws -> String {
        try chain.sign(AppleBodies.notification(type: type, subtype: subtype, environment: environment, bundleId: Self.bundleId,
                                                signedDate: Timestamp.now.millisecondsSince1970, transactionJWS: transactionJWS,
                                                notificationUUID: UUID().uuidString.lowercased()))
    }

    /// Get All Subscription Statuses' answer for one subscription.
    static func statuses(original: String, status: Int, transactionJWS: String, renewalJWS: String, environment: String = "Production") -> String {
        #"{"environment":"\#(environment)","bundleId":"\#(bundleId)","appAppleId":1234,"data":[{"subscriptionGroupIdentifier":"21","lastTransactions":[{"originalTransactionId":"\#(original)","status":\#(status),"signedTransactionInfo":"\#(transactionJWS)","signedRenewalInfo":"\#(renewalJWS)"}]}]}"#
    }
}

/// Calls of `POST /v1/purchases` as an app makes them.
enum PurchaseCalls {
    struct Answer: Sendable {
        struct Body: Decodable {
            struct Item: Decodable { var product, purchaseId, state: String }
            struct Purchase: Decodable { var store, purchaseId, product, kind, type: String }
            var user: String?
            var environment: String?
            var eventIds: [String]?
            var purchases: [Purchase]?
            var entitlements: [Item]?
            var error: String?
        }
        var status: Int
        var retryAfter: String?
        var text: String
        var body: Body? { try? JSONDecoder().decode(Body.self, from: Data(text.utf8)) }
        var error: String? { body?.error }
    }

    static func post(_ api: PurchasesAPI, _ json: String, token: String? = ApplePurchases.token) async throws -> Answer {
        var head = HTTPRequest(method: .post, scheme: "http", authority: "localhost", path: PurchasesAPI.path)
        if let token { head.headerFields[.authorization] = "Bearer \(token)" }
        head.headerFields[.contentType] = "application/json"
        let response = try await api.routes.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer(string: json))))
        let collected = CollectedBody()
        try await response.body.write(collected)
        return Answer(status: response.status.code, retryAfter: response.headers[.retryAfter],
                      text: String(decoding: collected.bytes.withLock { $0 }, as: UTF8.self))
    }

    static func apple(user: String, _ field: String, _ value: String, app: String = ApplePurchases.bundleId) -> String {
        #"{"app":"\#(app)","user":"\#(user)","apple":{"\#(field)":"\#(value)"}}"#
    }

    final class CollectedBody: ResponseBodyWriter, Sendable {
        let bytes = Mutex<[UInt8]>([])
        func write(_ buffer: ByteBuffer) async throws { bytes.withLock { $0 += Array(buffer.readableBytesView) } }
        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
