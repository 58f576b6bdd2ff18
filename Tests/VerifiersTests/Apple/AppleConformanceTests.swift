import Config
import Events
import Foundation
import Rejections
import TestSupport
import Testing
@testable import Toolkit
@testable import Verifiers

/// `../shared`, beside the project: third-party files are read from there, never committed.
enum SharedFiles {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared")
    static var present: Bool { FileManager.default.fileExists(atPath: root.appendingPathComponent("conformance").path) }
}

/// Third-party bytes nobody on this project produced: Apple's own library test vectors and 15 real
/// Apple-signed sandbox notifications, read from ../shared/conformance (never copied into the repo).
@Suite("Apple: conformance with Apple's vectors and real notifications", .enabled(if: SharedFiles.present, "../shared/conformance is absent"))
struct AppleConformanceTests {
    static var root: URL { SharedFiles.root }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func certificate(_ path: String) throws -> Certificate {
        try #require(Certificate.load(pemOrDER: Array(try Data(contentsOf: root.appendingPathComponent(path)))))
    }

    static func testSource(environments: [String] = ["Sandbox"], appAppleId: Int64? = 1234, bundleId: String = "com.example") throws -> AppleSource {
        AppleSource(apps: [AppleSettings.App(bundleId: bundleId, appAppleId: appAppleId, environments: environments)],
                    roots: [try certificate("conformance/apple/certs/testCA.der")])
    }

    static func request(_ jws: String) -> WebhookRequest {
        AppleBodies.request(jws, now: Timestamp(rfc3339: "2026-11-21T12:00:00Z")!)
    }

    @Test("Apple's testNotification: valid in Sandbox, wrong environment in Production")
    func testNotification() async throws {
        let jws = try Self.text("conformance/apple/mock_signed_data/testNotification")
        let event = try #require(try await Self.testSource().handle(Self.request(jws)).events.first)
        #expect(event.type == .storeTest)
        #expect(event.id == "apple:9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(event.occurredAt == "2023-04-12T15:45:24.000Z")
        #expect(try await Self.testSource(environments: ["Production"]).reason(Self.request(jws)) == .wrongEnvironment)
    }

    @Test("Apple's wrongBundleId is an unknown app; missingX5CHeaderClaim has no certificate")
    func refusals() async throws {
        let wrongBundle = try Self.text("conformance/apple/mock_signed_data/wrongBundleId")
        #expect(try await Self.testSource().reason(Self.request(wrongBundle)) == .unknownApp)
        let missingX5C = try Self.text("conformance/apple/mock_signed_data/missingX5CHeaderClaim")
        #expect(try await Self.testSource().reason(Self.request(missingX5C)) == .invalidCertificate)
        #expect(try await Self.testSource().reason(Self.request("a.b.c.d")) == .malformedJWS)
    }

    @Test("Apple's transactionInfo and renewalInfo verify with the same rules")
    func nestedVectors() async throws {
        let source = try Self.testSource()
        let transaction: TransactionPayload = try await source.verifiedPayload(
            try Self.text("conformance/apple/mock_signed_data/transactionInfo"), now: Timestamp(millisecondsSince1970: 0))
        #expect(transaction.bundleId == "com.example")
        #expect(transaction.environment == .sandbox)
        let renewal: RenewalInfoPayload = try await source.verifiedPayload(
            try Self.text("conformance/apple/mock_signed_data/renewalInfo"), now: Timestamp(millisecondsSince1970: 0))
        #expect(renewal.environment == .sandbox)
    }

    @Test("Apple's chain vectors: OIDs, expiry and the real G3 chain")
    func chainVectors() async throws {
        func verify(_ leaf: String, _ intermediate: String, root: String, at time: Int64) throws -> (any ReasonCode)? {
            let store = try #require(TrustStore(roots: [try Self.certificate(root)]))
            let x5c = JSONValue.array(try [leaf, intermediate, root].map { .string(Base64.encodeStandard(try Self.certificate($0).der)) })
            do { _ = try AppleChainVerifier(trustStore: store).verify(x5c: x5c, at: time); return nil } catch { return error.reason }
        }
        let x509 = "conformance/apple/x509/"
        let effective: Int64 = 1_761_962_975
        #expect(try verify(x509 + "test_leaf.pem", x509 + "test_intermediate.pem", root: "conformance/apple/certs/testCA.pem", at: effective) == nil)
        #expect(try verify(x509 + "test_leaf_for_intermediate_invalid_oid.pem", x509 + "test_intermediate_invalid_oid.pem",
                           root: "conformance/apple/certs/testCA.pem", at: effective) == .missingAppleOID)
        #expect(try verify(x509 + "test_leaf_invalid_oid.pem", x509 + "test_intermediate.pem",
                           root: "conformance/apple/certs/testCA.pem", at: effective) == .missingAppleOID)
        #expect(try verify(x509 + "test_leaf.pem", x509 + "test_intermediate.pem", root: "conformance/apple/certs/testCA.pem",
                           at: 2_280_946_846) == .certificateExpired)
        #expect(try verify(x509 + "real_apple_leaf_prod_ecc_receipt_signing_2025.pem", x509 + "real_apple_wwdr_g6_intermediate.pem",
                           root: "fixtures/apple/AppleRootCA-G3.pem", at: effective) == nil)
    }

    @Test("15 real Apple-signed notifications verify to Apple Root CA - G3 and decode as expected")
    func realNotifications() async throws {
        let source = AppleSource(
            apps: [AppleSettings.App(bundleId: "com.loki-project.loki-messenger", appAppleId: 1_470_168_868, environments: ["Sandbox"])],
            roots: try AppleRoots.load(paths: [Self.root.appendingPathComponent("fixtures/apple/AppleRootCA-G3.pem").path]))
        let expected = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: Self.root.appendingPathComponent("conformance/apple/real/expected.json"))) as? [[String: Any]])
        #expect(expected.count == 15)
        for entry in expected {
            let file = try #require(entry["file"] as? String)
            let jws = try Self.text("conformance/apple/real/\(file)")
            let event = try #require(try await source.handle(Self.request(jws)).events.first, "\(file)")
            #expect(event.id == "apple:\(entry["notificationUUID"] as? String ?? "")", "\(file)")
            let type = try #require(entry["notificationType"] as? String)
            let sourceType = [type, entry["subtype"] as? String].compactMap { $0 }.joined(separator: "/")
            #expect(event.sourceType == sourceType, "\(file)")
            let signedDate = try #require(entry["signedDate"] as? Int64 ?? (entry["signedDate"] as? NSNumber)?.int64Value)
            #expect(event.occurredAt == Timestamp(millisecondsSince1970: signedDate).rfc3339, "\(file)")
            if let tx = entry["tx"] as? [String: Any], let original = tx["originalTransactionId"] as? String {
                #expect(event.subject == original, "\(file)")
                #expect(event.transaction?.id == tx["transactionId"] as? String, "\(file)")
                if let price = (tx["price"] as? NSNumber)?.int64Value, let currency = tx["currency"] as? String {
                    #expect(event.price == NormalizedEvent.Price(amountMicros: price * 1000, currency: currency), "\(file)")
                }
            }
        }
    }

    @Test("the real TEST notification's leaf has expired since: it passes only at signedDate")
    func expiredSince() async throws {
        let jws = try Self.text("conformance/apple/real/01-TEST.jws")
        let x5c = try #require(try CompactJWS(jws).header()["x5c"])
        let store = try #require(TrustStore(roots: try AppleRoots.load(paths: [Self.root.appendingPathComponent("fixtures/apple/AppleRootCA-G3.pem").path])))
        let verifier = AppleChainVerifier(trustStore: store)
        _ = try verifier.verify(x5c: x5c, at: 1_757_035_472)
        #expect(throws: Rejection.self) { _ = try AppleChainVerifier(trustStore: store).verify(x5c: x5c, at: 1_795_000_000) }
    }
}
