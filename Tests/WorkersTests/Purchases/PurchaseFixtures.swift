import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Outbound
import Senders
import Synchronization
import TestSupport
import Testing
import Toolkit
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
                                   fetcher: URLSessionFetcher(), timeout: .seconds(5), logger: Self.logger)
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
    func setup(ownership: [String: PurchaseSettings.Ownership] = [:], waitMs: Int = 20_000) throws -> EntitlementWorkers.PurchasesSetup {
        var settings = PurchaseSettings()
        settings.ownership = ownership
        settings.waitMs = waitMs
        let receipts = try #require(AppReceiptVerifier(roots: [receiptChain.root], maxBase64Bytes: settings.maxReceiptBytes))
        let verifier = ApplePurchaseVerifier(source: chain.source(apps: [Self.app]), clients: [Self.bundleId: client], receipts: receipts,
                                             logger: Self.logger)
        return EntitlementWorkers.PurchasesSetup(verifiers: [verifier], settings: settings)
    }

    /// A subscription transaction as StoreKit 2 signs it; no `appAccountToken` unless given.
    func transaction(_ original: String, transactionId: String? = nil, environment: String = "Production", signedAgoMs: Int64 = 60_000,
                     expiresInMs: Int64 = 30 * day, appAccountToken: String? = nil, type: String = "Auto-Renewable Subscription",
                     productId: String = "pro.monthly", revokedAgoMs: Int64? = nil, signer: AppleTestChain? = nil) throws -> String {
        let now = Timestamp.now.millisecondsSince1970
        return try (signer ?? chain).sign(AppleBodies.transaction(
            environment: environment, bundleId: Self.bundleId, signedDate: now - signedAgoMs, originalTransactionId: original,
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
        let response = await api.respond(Request(head: head, body: RequestBody(buffer: ByteBuffer(string: json))))
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

/// A DER app receipt as Apple makes one: bundle id, creation date and in-app purchase receipts with
/// these transaction ids, signed as PKCS#7 by `signer`'s leaf and carrying its intermediate and root.
enum TestReceipt {
    /// A creation date in the test chains' validity (2020-2040), as Apple's receipts carry it.
    static let createdAt = "2024-03-01T12:00:00Z"

    static func make(transactions: [(id: String, original: String)], signer: AppleTestChain, bundleId: String = ApplePurchases.bundleId,
                     createdAt: String = createdAt) throws -> String {
        try sign(content(transactions: transactions, bundleId: bundleId, createdAt: createdAt), signer: signer)
    }

    /// The receipt's signed content: the attribute set.
    static func content(transactions: [(id: String, original: String)], bundleId: String = ApplePurchases.bundleId,
                        createdAt: String = createdAt) -> [UInt8] {
        let inApps = transactions.map { item in
            attribute(17, set([attribute(1703, utf8(item.id)), attribute(1705, utf8(item.original)), attribute(1702, utf8("pro.monthly"))]))
        }
        return set([attribute(2, utf8(bundleId)), attribute(12, ia5(createdAt))] + inApps)
    }

    /// `content` signed with the leaf's key, `certificates` (default the intermediate and root) carried beside the leaf.
    static func sign(_ content: [UInt8], signer: AppleTestChain, certificate: Certificate? = nil, key: PrivateKey? = nil,
                     certificates: [Certificate]? = nil) throws -> String {
        let signed = try #require(PKCS7Container.sign(content, certificate: certificate ?? signer.leaf, key: key ?? signer.leafKey,
                                                      chain: certificates ?? [signer.intermediate, signer.root]))
        return Data(signed).base64EncodedString()
    }

    /// PKCS#7 signedData around `content` with no signer at all: what the old parser read ids from.
    static func unsigned(_ content: [UInt8]) -> String {
        let data: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
        let signedData: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
        let inner = tlv(0x30, data + tlv(0xA0, tlv(0x04, content)))
        let body = tlv(0x30, integer(1) + tlv(0x31, []) + inner + tlv(0x31, []))
        return Data(tlv(0x30, signedData + tlv(0xA0, body))).base64EncodedString()
    }

    /// The receipt with the first occurrence of `from` in its DER replaced by `to` (same length):
    /// a genuine receipt whose signed content was edited.
    static func tampered(_ base64: String, replacing from: String, with to: String) throws -> String {
        var der = try #require(Data(base64Encoded: base64).map { Array($0) })
        let needle = Array(from.utf8)
        let at = try #require(der.indices.dropLast(needle.count - 1).first { Array(der[$0..<$0 + needle.count]) == needle })
        der.replaceSubrange(at..<at + needle.count, with: Array(to.utf8))
        return Data(der).base64EncodedString()
    }

    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] { tlv(0x30, integer(type) + integer(1) + tlv(0x04, value)) }
    static func set(_ items: [[UInt8]]) -> [UInt8] { tlv(0x31, items.flatMap { $0 }) }
    static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }

    static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat { bytes.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 } while rest > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        if count < 0x80 { return [tag, UInt8(count)] + content }
        var length: [UInt8] = []
        var rest = count
        while rest > 0 { length.insert(UInt8(rest & 0xFF), at: 0); rest >>= 8 }
        return [tag, 0x80 | UInt8(length.count)] + length + content
    }
}
