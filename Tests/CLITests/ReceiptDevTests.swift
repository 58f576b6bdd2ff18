import Events
import Foundation
import TestSupport
import Testing
import Toolkit
import Verifiers

/// A customer holding the app's public validator key against the real `tollgate dev`: a self-made
/// receipt naming another customer's transaction takes nothing and learns nothing (docs/security.md).
@Suite("tollgate dev: self-made receipts")
struct ReceiptDevTests {
    static let bundleId = "com.example"
    static let validatorKey = "validator-key-public-0123"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"

    @Test("the victim's signed receipt entitles the victim; self-made receipts (unsigned, another root's) holding the victim's transaction are refused, Apple is never asked, the victim keeps it; a receipt past the cap is 413")
    func selfMadeReceipts() async throws {
        let appChain = try AppleTestChain()
        var receiptOptions = AppleTestChain.Options()
        receiptOptions.keys = try AppleTestChain.Keys.rsa()
        let receiptChain = try AppleTestChain(receiptOptions)
        var otherOptions = AppleTestChain.Options()
        otherOptions.keys = try AppleTestChain.Keys.rsa()
        let otherRoot = try AppleTestChain(otherOptions)
        let apiKey = try #require(PrivateKey.generateP256())
        let fake = FakeAppStoreAPI(publicKey: try #require(apiKey.publicKey), issuerId: Self.issuerId, keyId: Self.keyId, bundleId: Self.bundleId)
        defer { fake.stop() }

        // The victim's subscription, as Apple's API knows it.
        let now = Timestamp.now.millisecondsSince1970
        let original = "870001"
        let transaction = try appChain.sign(AppleBodies.transaction(environment: "Production", bundleId: Self.bundleId, signedDate: now,
                                                                    originalTransactionId: original, transactionId: original,
                                                                    purchaseDate: now - 60_000, expiresDate: now + 30 * 86_400_000,
                                                                    appAccountToken: nil))
        fake.store(#"{"revision":"r1","bundleId":"\#(Self.bundleId)","appAppleId":1234,"environment":"Production","hasMore":false,"signedTransactions":["\#(transaction)"]}"#,
                   at: "/production/inApps/v2/history/\(original)")
        let renewal = try appChain.sign(AppleBodies.renewal(environment: "Production", originalTransactionId: original, signedDate: now))
        fake.store(#"{"environment":"Production","bundleId":"\#(Self.bundleId)","appAppleId":1234,"data":[{"subscriptionGroupIdentifier":"21","lastTransactions":[{"originalTransactionId":"\#(original)","status":1,"signedTransactionInfo":"\#(transaction)","signedRenewalInfo":"\#(renewal)"}]}]}"#,
                   at: "/production/inApps/v1/subscriptions/\(original)")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-receipts-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func file(_ name: String, _ text: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let config = """
            http: { host: 127.0.0.1, port: 0 }
            api: { tokens: [receipts-dev-server-token-0123] }
            purchases:
              validatorKeys: { \(Self.bundleId): \(Self.validatorKey) }
              receiptRootCertificates: [\(try file("receipt-root.pem", receiptChain.root.pem))]
              maxReceiptBytes: 16384
            sources:
              apple:
                roots: [\(try file("apple-root.pem", appChain.root.pem))]
                apps:
                  - bundleId: \(Self.bundleId)
                    appAppleId: 1234
                    environments: [Production, Sandbox]
                    serverApi: { issuerId: \(Self.issuerId), keyId: \(Self.keyId), privateKeyFile: \(try file("key.p8", try #require(apiKey.pem))) }
                serverApiEndpoints: { productionURL: "\(fake.productionURL)", sandboxURL: "\(fake.sandboxURL)", timeoutMs: 5000 }
            """
        try await withOwnDev(configPath: try file("tollgate.yaml", config), directory: directory) { base in
            try await Self.walk(base: base, fake: fake, original: original, receiptChain: receiptChain, otherRoot: otherRoot)
        }
    }

    static func validate(_ base: String, receipt: String, user: String?) async throws -> HTTP.Response {
        let additional = user.map { #","additionalData":{"applicationUsername":"\#($0)"}"# } ?? ""
        let body = #"{"id":"\#(bundleId)","type":"application","transaction":{"type":"ios-appstore","id":"\#(bundleId)","appStoreReceipt":"\#(receipt)"}\#(additional)}"#
        return try await HTTP.request("POST", base + "/v1/validate?appName=\(bundleId)&apiKey=\(validatorKey)",
                                      headers: ["Content-Type": "application/json"], body: body)
    }

    static func entitled(_ base: String, _ user: String) async throws -> HTTP.Response {
        try await HTTP.request("GET", base + "/v1/users/\(user)/entitlements?app=\(bundleId)",
                               headers: ["Authorization": "Bearer receipts-dev-server-token-0123"])
    }

    static func walk(base: String, fake: FakeAppStoreAPI, original: String, receiptChain: AppleTestChain, otherRoot: AppleTestChain) async throws {
        let genuine = try TestReceipt.make(transactions: [(original, original)], signer: receiptChain, bundleId: bundleId)
        let victim = try await validate(base, receipt: genuine, user: "victim")
        #expect(victim.status == 200 && victim.body.contains(#""ok":true"#), "\(victim.body)")
        _ = try await eventually("the victim entitled") { () -> Bool? in
            let answer = try await entitled(base, "victim")
            return answer.status == 200 && answer.body.contains("pro.monthly") ? true : nil
        }
        let asked = fake.requests.count

        let content = TestReceipt.content(transactions: [(original, original)], bundleId: bundleId)
        let forged = [("unsigned", TestReceipt.unsigned(content)), ("another root's", try TestReceipt.sign(content, signer: otherRoot))]
        for (name, receipt) in forged {
            for user in ["attacker", nil] as [String?] {
                let answer = try await validate(base, receipt: receipt, user: user)
                #expect(answer.body.contains(#""ok":false"#) && !answer.body.contains(#""ok":true"#), "\(name), \(user ?? "no user"): \(answer.body)")
                #expect(!answer.body.contains(original) && !answer.body.contains("pro.monthly"), "\(name): \(answer.body)")
            }
        }
        #expect(fake.requests.count == asked, "Apple was asked about a self-made receipt")
        #expect(try await entitled(base, "attacker").status == 404)
        #expect(try await entitled(base, "victim").body.contains("pro.monthly"))

        // Past purchases.maxReceiptBytes: 413 before it is decoded.
        let padded = TestReceipt.content(transactions: (0..<2_000).map { (String(880_000 + $0), String(880_000 + $0)) }, bundleId: bundleId)
        let tooLarge = try await validate(base, receipt: TestReceipt.unsigned(padded), user: "attacker")
        #expect(tooLarge.status == 200 && tooLarge.body.contains(#""status":413"#) && tooLarge.body.contains(#""error":"body_too_large""#), "\(tooLarge.body)")
        #expect(fake.requests.count == asked)
    }
}
