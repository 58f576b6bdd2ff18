import Config
import Foundation
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// A legacy app receipt is believed only once it is shown to be Apple's for the app: its PKCS#7
/// signature, its signer's chain to the configured root at its creation date, the receipt-signing
/// marker, its bundle id. Each way a self-made receipt could pass is tried here with chains the test
/// makes (RSA, shaped like Apple's receipt chain); the API tests show the same refusals end to end.
@Suite("App receipts: verified before they are believed")
struct AppReceiptVerifierTests {
    static let bundleId = ApplePurchases.bundleId
    static let victim: [(id: String, original: String)] = [("850002", "850001")]

    static func verifier(root: Certificate, maxBytes: Int = 1 << 20) throws -> AppReceiptVerifier {
        try #require(AppReceiptVerifier(roots: [root], maxBase64Bytes: maxBytes))
    }

    static func problem(_ receipt: String, _ verifier: AppReceiptVerifier, bundleId: String = bundleId) -> AppReceiptVerifier.Problem? {
        do {
            _ = try verifier.transactionIds(base64: receipt, bundleId: bundleId)
            return nil
        } catch {
            return error
        }
    }

    @Test("a receipt signed through the configured root gives its transaction ids in the receipt's order, each once")
    func genuine() throws {
        let chain = try ApplePurchases.receiptChain()
        let receipt = try TestReceipt.make(transactions: [("3", "1"), ("2", "1"), ("3", "1"), ("4", "4")], signer: chain)
        #expect(try Self.verifier(root: chain.root).transactionIds(base64: receipt, bundleId: Self.bundleId) == ["3", "1", "2", "4"])
    }

    @Test("forgeries are refused: unsigned, self-signed, another root's chain, a developer's certificate, edited content")
    func forgeries() throws {
        let chain = try ApplePurchases.receiptChain()
        let verifier = try Self.verifier(root: chain.root)
        let content = TestReceipt.content(transactions: Self.victim)
        let otherRoot = try ApplePurchases.receiptChain(other: true)
        // Certificates of Apple's own chain that are not its receipt signer: WWDR issues every developer's.
        let developer = try ApplePurchases.receiptChain(leafOID: "1.2.840.113635.100.6.1.2")
        let genuine = try TestReceipt.make(transactions: Self.victim, signer: chain)

        #expect(Self.problem(TestReceipt.unsigned(content), verifier) == .malformed("not exactly one signer"))
        // The signer is its own root, carried in the receipt: never a trust anchor.
        let selfSigned = try TestReceipt.sign(content, signer: otherRoot, certificate: otherRoot.root, key: otherRoot.rootKey, certificates: [])
        #expect(Self.problem(selfSigned, verifier).map(Self.untrusted) == true)
        // A whole chain like Apple's, to a root of the same name that nobody configured.
        #expect(Self.problem(try TestReceipt.sign(content, signer: otherRoot), verifier).map(Self.untrusted) == true)
        #expect(Self.problem(try TestReceipt.sign(content, signer: developer), verifier) == .notReceiptSigner)
        // The genuine receipt of someone else, the transaction id edited to the victim's.
        let edited = try TestReceipt.tampered(try TestReceipt.make(transactions: [("850009", "850001")], signer: chain),
                                              replacing: "850009", with: "850002")
        #expect(Self.problem(edited, verifier) == .badSignature)
        // One byte of the signed content changed anywhere (here the bundle id) is enough.
        #expect(Self.problem(try TestReceipt.tampered(genuine, replacing: "com.example", with: "com.exampla"), verifier) == .badSignature)
        // And the genuine one passes, so the refusals above are the forgeries'.
        #expect(Self.problem(genuine, verifier) == nil)
    }

    static func untrusted(_ problem: AppReceiptVerifier.Problem) -> Bool {
        if case .untrusted = problem { return true }
        return false
    }

    @Test("not a receipt: not base64, bytes after the container, content that is not data, a pile of certificates, no creation date, a field twice")
    func malformed() throws {
        let chain = try ApplePurchases.receiptChain()
        let verifier = try Self.verifier(root: chain.root)
        #expect(Self.problem("not base64!", verifier) == .notBase64)
        let genuine = try #require(Data(base64Encoded: try TestReceipt.make(transactions: Self.victim, signer: chain)))
        #expect(Self.problem((genuine + [0]).base64EncodedString(), verifier) == .malformed("bytes follow the PKCS#7 container"))
        // signedData whose content type is 1.2.840.113549.1.7.7, which is not data.
        var notData = Array(try #require(Data(base64Encoded: TestReceipt.unsigned([0x31, 0x00]))))
        let dataOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]
        let at = try #require(notData.indices.last { Array(notData[$0..<min($0 + 9, notData.count)]) == dataOID })
        notData[at + 8] = 0x07
        #expect(Self.problem(Data(notData).base64EncodedString(), verifier) == .malformed("the signed content is not of type data"))

        // Three certificates are Apple's; a pile of them is nobody's receipt and reaches no chain builder.
        let piled = try TestReceipt.sign(TestReceipt.content(transactions: Self.victim), signer: chain,
                                         certificates: Array(repeating: chain.intermediate, count: 8) + [chain.root])
        #expect(Self.problem(piled, verifier) == .malformed("more than 8 certificates"))

        let attributes = TestReceipt.attribute(17, TestReceipt.set([TestReceipt.attribute(1703, TestReceipt.utf8("1"))]))
        let undated = TestReceipt.set([TestReceipt.attribute(2, TestReceipt.utf8(Self.bundleId)), attributes])
        #expect(Self.problem(try TestReceipt.sign(undated, signer: chain), verifier) == .malformed("no RFC 3339 creation date (field 12)"))
        let twice = TestReceipt.set([TestReceipt.attribute(2, TestReceipt.utf8("com.other")), TestReceipt.attribute(2, TestReceipt.utf8(Self.bundleId)),
                                     TestReceipt.attribute(12, TestReceipt.ia5(TestReceipt.createdAt)), attributes])
        #expect(Self.problem(try TestReceipt.sign(twice, signer: chain), verifier) == .malformed("field 2 appears more than once"))
    }

    @Test("a receipt of another bundle id, signed as Apple signs, is refused")
    func otherApp() throws {
        let chain = try ApplePurchases.receiptChain()
        let receipt = try TestReceipt.make(transactions: Self.victim, signer: chain, bundleId: "com.other")
        #expect(Self.problem(receipt, try Self.verifier(root: chain.root)) == .otherApp)
        #expect(Self.problem(receipt, try Self.verifier(root: chain.root), bundleId: "com.other") == nil)
    }

    @Test("the chain is checked at the receipt's creation date: valid then but expired now passes, made after it expired or before it began does not")
    func creationDate() throws {
        // A WWDR intermediate valid 2020-2022, as Apple's first one expired in 2023 while its receipts stayed good.
        let expired = try ApplePurchases.receiptChain(intermediateValidity: AppleTestChain.y2020...(AppleTestChain.y2020 + 2 * 365 * 86_400))
        let verifier = try Self.verifier(root: expired.root)
        let madeThen = try TestReceipt.make(transactions: Self.victim, signer: expired, createdAt: "2021-06-01T00:00:00Z")
        #expect(try verifier.transactionIds(base64: madeThen, bundleId: Self.bundleId) == ["850002", "850001"])
        let madeAfter = try TestReceipt.make(transactions: Self.victim, signer: expired, createdAt: "2023-06-01T00:00:00Z")
        #expect(Self.problem(madeAfter, verifier) == .expired)
        let madeBefore = try TestReceipt.make(transactions: Self.victim, signer: expired, createdAt: "2019-06-01T00:00:00Z")
        #expect(Self.problem(madeBefore, verifier) == .expired)
    }

    @Test("bounded: a receipt past the size limit is refused before it is decoded, and so is one with more attributes than it allows")
    func bounded() throws {
        let chain = try ApplePurchases.receiptChain()
        let small = try Self.verifier(root: chain.root, maxBytes: 65_536)
        #expect(Self.problem(String(repeating: "A", count: 65_537), small) == .tooLarge)
        let genuine = try TestReceipt.make(transactions: Self.victim, signer: chain)
        #expect(Self.problem(genuine, try Self.verifier(root: chain.root, maxBytes: genuine.utf8.count - 1)) == .tooLarge)
        #expect(Self.problem(genuine, try Self.verifier(root: chain.root, maxBytes: genuine.utf8.count)) == nil)

        // Minimal attributes (10 bytes of DER each): 65,536 bytes of base64 allow 4,096 of them.
        func padded(_ count: Int) throws -> String {
            let filler = Array(repeating: TestReceipt.attribute(99, []), count: count)
            let content = TestReceipt.set([TestReceipt.attribute(2, TestReceipt.utf8(Self.bundleId)),
                                           TestReceipt.attribute(12, TestReceipt.ia5(TestReceipt.createdAt))] + filler
                                          + [TestReceipt.attribute(17, TestReceipt.set([TestReceipt.attribute(1703, TestReceipt.utf8("1"))]))])
            return try TestReceipt.sign(content, signer: chain)
        }
        #expect(small.maxFields == 4_096)
        #expect(try small.transactionIds(base64: try padded(4_000), bundleId: Self.bundleId) == ["1"])
        #expect(Self.problem(try padded(4_100), small) == .malformed("more than 4096 receipt attributes"))
    }

    @Test("a receipt just under the 1 MiB limit holding 26,000 distinct transaction ids gives each once, in order (the set that keeps them is linear; an array's lookups took tens of seconds)")
    func linear() throws {
        let chain = try ApplePurchases.receiptChain()
        let count = 13_000
        let inApps = (0..<count).map { (index: Int) -> [UInt8] in
            let id = TestReceipt.attribute(1703, TestReceipt.utf8(String(1_000_000_000 + 2 * index)))
            let original = TestReceipt.attribute(1705, TestReceipt.utf8(String(1_000_000_001 + 2 * index)))
            return TestReceipt.attribute(17, TestReceipt.set([id, original]))
        }
        let content = TestReceipt.set([TestReceipt.attribute(2, TestReceipt.utf8(Self.bundleId)),
                                       TestReceipt.attribute(12, TestReceipt.ia5(TestReceipt.createdAt))] + inApps)
        let receipt = try TestReceipt.sign(content, signer: chain)
        let size = receipt.utf8.count
        #expect(size > 900_000 && size <= 1 << 20, "\(size) bytes")
        let verifier = try Self.verifier(root: chain.root)
        let ids = try verifier.transactionIds(base64: receipt, bundleId: Self.bundleId)
        #expect(ids.count == 2 * count && ids.first == "1000000000" && ids.last == String(1_000_000_001 + 2 * (count - 1)))
        #expect(Set(ids).count == ids.count)
    }

    @Test("roots: the Apple Inc. Root is built in with Apple's fingerprint; configured files replace it; an unreadable one names its key")
    func roots() throws {
        let builtIn = try AppReceiptRoots.load(paths: [])
        #expect(builtIn.count == 1)
        #expect(Digest.hex(try #require(builtIn.first).sha256Fingerprint).uppercased()
                == "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024")
        #expect(builtIn.first?.commonName == "Apple Root CA")
        #expect(builtIn.first?.validity?.upperBound == 2_054_670_036) // 2035-02-09T21:40:36Z

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receipt-roots-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let chain = try ApplePurchases.receiptChain()
        let pem = directory.appendingPathComponent("root.pem")
        try Data(chain.root.pem.utf8).write(to: pem)
        #expect(try AppReceiptRoots.load(paths: [pem.path]).map(\.der) == [chain.root.der])

        let missing = directory.appendingPathComponent("missing.pem").path
        #expect(throws: ConfigError(key: "purchases.receiptRootCertificates[1]", message: "cannot read \(missing)")) {
            try AppReceiptRoots.load(paths: [pem.path, missing])
        }
        let garbage = directory.appendingPathComponent("garbage.pem")
        try Data("not a certificate".utf8).write(to: garbage)
        #expect(throws: ConfigError(key: "purchases.receiptRootCertificates[0]", message: "\(garbage.path) is not a PEM or DER certificate")) {
            try AppReceiptRoots.load(paths: [garbage.path])
        }
        // A certificate that calls itself Apple Root CA and is not Apple's is refused.
        var impostor = CertificateBuilder(subject: "Apple Root CA", notBefore: AppleTestChain.y2020, notAfter: AppleTestChain.y2040)
        impostor.isCA = true
        let impostorKey = try #require(ApplePurchases.otherReceiptKeys).root
        let named = directory.appendingPathComponent("impostor.der")
        try Data(try #require(impostor.issue(key: impostorKey, issuer: nil, issuerKey: impostorKey)).der).write(to: named)
        #expect(throws: ConfigError(key: "purchases.receiptRootCertificates[0]",
                                    message: "\(named.path) is named Apple Root CA but its SHA-256 fingerprint is not Apple's")) {
            try AppReceiptRoots.load(paths: [named.path])
        }
    }
}
