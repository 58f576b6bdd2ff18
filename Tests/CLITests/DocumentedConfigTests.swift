import Foundation
import TestSupport
import Testing
import Toolkit
import Verifiers

/// The configurations the documentation gives, started as written: the first YAML block of
/// docs/sileo.md and docs/reconciliation.md and examples/dev.yaml, each from another working directory
/// than its own (its relative paths are the file's). Only what cannot be reached here is overridden, by
/// the documented environment variables: the port, and Antom's and Apple's API addresses (local fakes
/// that answer and sign as the real ones do).
@Suite("Documented configurations start as written")
struct DocumentedConfigTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The first ```yaml block after `heading` in the document at `path` (relative to the repository).
    static func firstYAML(_ path: String, after heading: String) throws -> String {
        let text = try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
        let section = try #require(text.range(of: "\n" + heading + "\n"), "\(path) has no \(heading)")
        let open = try #require(text.range(of: "```yaml\n", range: section.upperBound..<text.endIndex))
        let close = try #require(text.range(of: "\n```", range: open.upperBound..<text.endIndex))
        return String(text[open.upperBound..<close.lowerBound]) + "\n"
    }

    /// A fresh directory holding `files` (relative path: bytes), and another to run from.
    static func folders(_ files: [String: [UInt8]]) throws -> (config: URL, elsewhere: URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-documented-\(UUID().uuidString)")
        let config = root.appendingPathComponent("merchant"), elsewhere = root.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        for (path, bytes) in files {
            let url = config.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }
        return (config, elsewhere)
    }

    @Test("docs/sileo.md's first vendor, as written: a customer signs in, buys through a sandbox Antom client, downloads; the merchant finds the checkout by user and product and refunds it")
    func sileoFirstVendor() async throws {
        let yaml = try Self.firstYAML("docs/sileo.md", after: "## A first vendor, start to finish")
        let clientId = "SANDBOX_5YBZ1N2Z8Q6L09876", base = "/sileo/myrepo", package = "com.example.tweak"
        let token = "change-me-server-token-0123456789", publicBase = "https://pay.example.com"
        for named in [clientId, base, package, token, publicBase, "environment: sandbox", "file: tweak_1.0.deb"] {
            #expect(yaml.contains(named), "the documented configuration no longer says \(named)")
        }
        let (merchant, platform) = await offPool { (PrivateKey.generateRSA()!, PrivateKey.generateRSA()!) }
        let signInKey = try #require(PrivateKey.generateP256())
        let antom = FakeAntom(merchantPublicKey: try #require(PublicKey.load(pemOrDER: Array((merchant.publicKeyPEM ?? "").utf8))),
                              platformKey: platform, clientId: clientId)
        defer { antom.stop() }
        let deb = SileoDevWalkTests.fileBytes
        let (folder, elsewhere) = try Self.folders([
            "tollgate.yaml": Array(yaml.utf8), "keys/antom-public.pem": Array((platform.publicKeyPEM ?? "").utf8),
            "keys/merchant-private.pem": Array((merchant.pem ?? "").utf8), "keys/signin.pub.pem": Array((signInKey.publicKeyPEM ?? "").utf8),
            "debs/tweak_1.0.deb": deb])
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        try await withOwnDev(configPath: folder.appendingPathComponent("tollgate.yaml").path, directory: elsewhere,
                             environment: ["TOLLGATE_HTTP_PORT": "0", "TOLLGATE_CHECKOUTS_ANTOM_BASE_URL": antom.baseURL]) { local in
            let vendor = local + base
            let alice = try await SileoDevWalkTests.signIn(vendor: vendor, local: local, user: "alice", key: signInKey,
                                                           signInHost: "account.example.com")
            let purchase = try await SileoHTTP.call("POST", vendor + "/package/\(package)/purchase",
                                                    json: #"{"token":"BEARER \#(alice.token)","payment_secret":"\#(alice.secret)"}"#)
            #expect(purchase.json["status"]?.int64 == 1, "\(String(decoding: purchase.body, as: UTF8.self))")
            let reference = try #require(antom.seen.last?.body?["paymentRequestId"]?.string)
            #expect(antom.seen.last?.signatureVerified == true && antom.seen.last?.body?["paymentAmount"]?["value"]?.string == "199")
            #expect(try await SileoDevWalkTests.notify(local: local, reference: reference, amount: "199", platform: platform,
                                                       clientId: clientId).status == 200)
            try await SileoDevWalkTests.waitUntilPurchased(vendor: vendor, token: alice.token, expected: true, package: package)
            let authorized = try await SileoHTTP.call("POST", vendor + "/package/\(package)/authorize_download", json: #"{"token":"BEARER \#(alice.token)"}"#)
            let url = try #require(authorized.json["url"]?.string)
            #expect(url.hasPrefix(publicBase + base + "/download/"))
            #expect([UInt8](try await SileoHTTP.call("GET", local + String(url.dropFirst(publicBase.count))).body) == deb)

            // The merchant's backend finds the checkout as docs/sileo.md says, and refunds it.
            let listed = try await HTTP.request("GET", local + "/v1/checkouts?app=\(clientId)&user=alice&product=tweak.lifetime",
                                                headers: ["Authorization": "Bearer \(token)"])
            let checkouts = try #require(JSONValue.parse(Array(listed.body.utf8))?["checkouts"]?.array, "\(listed.body)")
            #expect(checkouts.count == 1 && checkouts.first?["state"]?.string == "paid" && checkouts.first?["environment"]?.string == "sandbox")
            let id = try #require(checkouts.first?["id"]?.string)
            antom.set(FakeAntom.RefundMode.inProcess)
            let refund = try await HTTP.request("POST", local + "/v1/checkouts/\(id)/refund", headers: ["Authorization": "Bearer \(token)"], body: "")
            #expect(refund.status == 202, "\(refund.body)")
            let refundRequestId = try #require(antom.seen.last?.body?["refundRequestId"]?.string)
            #expect(try await SileoDevWalkTests.notifyRefund(local: local, refundRequestId: refundRequestId, platform: platform,
                                                             clientId: clientId).status == 200)
            try await SileoDevWalkTests.waitUntilPurchased(vendor: vendor, token: alice.token, expected: false, package: package)
        }
    }

    @Test("docs/sileo.md's vendor left at the default environment with its sandbox client, or a key in the other casing: start-up stops, naming the key and the fix")
    func sileoRefusals() async throws {
        let yaml = try Self.firstYAML("docs/sileo.md", after: "## A first vendor, start to finish")
        let merchant = await offPool { PrivateKey.generateRSA()! }
        let signInKey = try #require(PrivateKey.generateP256())
        for (from, to, says) in [("      environment: sandbox", "      environment: production",
                                  "environment is production but alipayplus account SANDBOX_5YBZ1N2Z8Q6L09876 pays in sandbox"),
                                 ("  publicBaseURL: https://pay.example.com", "  publicBaseUrl: https://pay.example.com",
                                  ".publicBaseUrl: unknown key: it is spelled publicBaseURL")] {
            let edited = yaml.replacingOccurrences(of: from, with: to)
            #expect(edited != yaml)
            let (folder, elsewhere) = try Self.folders([
                "tollgate.yaml": Array(edited.utf8), "keys/antom-public.pem": Array((merchant.publicKeyPEM ?? "").utf8),
                "keys/merchant-private.pem": Array((merchant.pem ?? "").utf8),
                "keys/signin.pub.pem": Array((signInKey.publicKeyPEM ?? "").utf8), "debs/tweak_1.0.deb": [1]])
            defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
            let result = try await CLI.run(["dev", "--config", folder.appendingPathComponent("tollgate.yaml").path],
                                           environment: ["TOLLGATE_HTTP_PORT": "0"], directory: elsewhere)
            #expect(result.status != 0)
            #expect(result.stderr.contains(says), "\(result.stderr)")
            #expect(!result.stdout.contains("listening"))
        }
    }

    @Test("docs/reconciliation.md's first configuration, as written: with --reconcile-now the workers ask Apple's history in both environments, signed with the app's key")
    func reconciliationFirstConfig() async throws {
        let yaml = try Self.firstYAML("docs/reconciliation.md", after: "## A first configuration")
        let issuerId = "57246542-96fe-1a63-e053-0824d011072a", keyId = "2X9R4HXF34", bundleId = "com.example.app"
        for named in [issuerId, keyId, bundleId, "SubscriptionKey_2X9R4HXF34.p8", "AppleRootCA-G3.cer"] {
            #expect(yaml.contains(named), "the documented configuration no longer says \(named)")
        }
        let key = try #require(PrivateKey.generateP256())
        let chain = try AppleTestChain()
        let apple = FakeAppStoreAPI(publicKey: try #require(key.publicKey), issuerId: issuerId, keyId: keyId, bundleId: bundleId)
        defer { apple.stop() }
        for environment in ["production", "sandbox"] {
            apple.store(#"{"hasMore":false,"notificationHistory":[]}"#, at: "/\(environment)/inApps/v1/notifications/history")
        }
        let (folder, elsewhere) = try Self.folders(["tollgate.yaml": Array(yaml.utf8), "SubscriptionKey_2X9R4HXF34.p8": Array((key.pem ?? "").utf8),
                                                    "AppleRootCA-G3.cer": Array(chain.root.pem.utf8)])
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        try await withOwnDev(configPath: folder.appendingPathComponent("tollgate.yaml").path, directory: elsewhere, arguments: ["--reconcile-now"],
                             environment: ["TOLLGATE_HTTP_PORT": "0",
                                           "TOLLGATE_SOURCES_APPLE_SERVER_API_ENDPOINTS_PRODUCTION_URL": apple.productionURL,
                                           "TOLLGATE_SOURCES_APPLE_SERVER_API_ENDPOINTS_SANDBOX_URL": apple.sandboxURL]) { local in
            _ = try await eventually("ready") { () -> Bool? in try await HTTP.request("GET", local + "/readyz").status == 200 ? true : nil }
            let asked = try await eventually("both environments' history asked") { () -> Set<String>? in
                let targets = Set(apple.requests.map(\.target).filter { $0.hasSuffix("/notifications/history") })
                return targets.count == 2 ? targets : nil
            }
            #expect(asked == ["/production/inApps/v1/notifications/history", "/sandbox/inApps/v1/notifications/history"])
            #expect(apple.jwtProblems.isEmpty)
        }
    }

    @Test("examples/dev.yaml starts from any working directory: its keys and files are found beside it, its Sileo vendor serves")
    func devExample() async throws {
        let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-dev-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        try await withOwnDev(configPath: Self.repository.appendingPathComponent("examples/dev.yaml").path, directory: elsewhere,
                             environment: ["TOLLGATE_HTTP_PORT": "0"]) { local in
            _ = try await eventually("ready") { () -> Bool? in try await HTTP.request("GET", local + "/readyz").status == 200 ? true : nil }
            let info = try await SileoHTTP.call("GET", local + "/sileo/dev/info")
            #expect(info.status == 200 && info.json["name"]?.string == "Dev Repo")
        }
        // The store and spool took their defaults: under the working directory, not the repository's.
        #expect(FileManager.default.fileExists(atPath: elsewhere.appendingPathComponent(".tollgate/tollgate.sqlite").path))
    }
}
