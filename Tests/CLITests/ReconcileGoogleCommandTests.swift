import Events
import Foundation
import TestSupport
import Testing
import Toolkit

/// `tollgate reconcile google` as operators run it, against a local Google (its OAuth token endpoint
/// checking the service account's JWT, `purchases.voidedpurchases.list`) with the workers' configuration.
@Suite("tollgate reconcile google")
struct ReconcileGoogleCommandTests {
    static let package = "com.example.reconcile.google"
    static let email = "play@tollgate-test.iam.gserviceaccount.com"
    static let keyId = "1f0e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"

    struct Setup {
        let fake: FakeGooglePlay
        let directory: URL
        let configPath: String
        let key: PrivateKey
    }

    static func setUp() async throws -> Setup {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-reconcile-google-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = try #require(await offPool { PrivateKey.generateRSA() })
        let fake = FakeGooglePlay(publicKey: try #require(key.publicKey), clientEmail: email, keyId: keyId)
        let account = try TestServiceAccount.json(key: key, email: email, keyId: keyId)
        let accountPath = directory.appendingPathComponent("play.json")
        try Data(account.utf8).write(to: accountPath)
        let config = """
            store: { url: "sqlite:\(directory.appendingPathComponent("store.sqlite").path)" }
            sources:
              google:
                audience: https://example.com/webhooks/google
                serviceAccountEmail: push@example.iam.gserviceaccount.com
                packages: [\(package)]
                jwks: https://127.0.0.1:9/certs
                playApi: { baseURL: "\(fake.baseURL)", tokenURL: "\(fake.tokenURL)", credentialsFile: \(accountPath.path), timeoutMs: 5000 }
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        return Setup(fake: fake, directory: directory, configPath: configPath, key: key)
    }

    @Test("a dry run lists the package's voided purchases with the service account and says what it would publish: exit 0; a service account Google refuses: exit 1 with what to check, never the key")
    func dryRunAndRefusal() async throws {
        let setup = try await Self.setUp()
        defer { setup.fake.stop(); try? FileManager.default.removeItem(at: setup.directory) }
        let now = Timestamp.now.millisecondsSince1970
        setup.fake.storeVoided([FakeGooglePlay.voidedPurchase("voided-token-1", atMs: now - 3_600_000), FakeGooglePlay.voidedPurchase("voided-token-2", atMs: now - 60_000)])
        // A dry run never connects to Kafka: no broker is needed at this address.
        let arguments = ["reconcile", "google", "--config", setup.configPath, "--brokers", "127.0.0.1:1", "--dry-run", "--since", "2d"]
        let result = try await CLI.run(arguments, directory: setup.directory)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout == "\(Self.package): 1 pages, 2 voided purchases, 2 new, 0 known, 0 rejected (dry run: nothing published)\n")
        #expect(setup.fake.jwtProblems.isEmpty && setup.fake.tokenRequests == 1)
        let listed = try #require(setup.fake.apiTargets.first)
        #expect(listed.hasPrefix("/androidpublisher/v3/applications/\(Self.package)/purchases/voidedpurchases?startTime="), "\(listed)")

        setup.fake.scriptToken(.reply(.json(400, #"{"error": "invalid_grant", "error_description": "Invalid JWT Signature."}"#)))
        let refused = try await CLI.run(arguments, directory: setup.directory)
        #expect(refused.status == 1, "\(refused.stdout)\n\(refused.stderr)")
        #expect(refused.stdout.contains("stopped: Play API token call failed") && refused.stdout.contains("the token endpoint refused service account \(Self.email)"),
                "\(refused.stdout)")
        let keyLine = String((setup.key.pem ?? "").split(separator: "\n").dropFirst().first ?? "")
        #expect(keyLine.count > 40 && !(refused.stdout + refused.stderr).contains(keyLine))
    }

    @Test("a package that is not configured is a usage error: exit 2")
    func unknownPackage() async throws {
        let setup = try await Self.setUp()
        defer { setup.fake.stop(); try? FileManager.default.removeItem(at: setup.directory) }
        let result = try await CLI.run(["reconcile", "google", "--config", setup.configPath, "--brokers", "127.0.0.1:1", "--package", "com.example.other",
                                        "--dry-run"], directory: setup.directory)
        #expect(result.status == 2)
        #expect(result.stderr.contains("com.example.other is not in sources.google.packages (\(Self.package))"), "\(result.stderr)")
        #expect(setup.fake.tokenRequests == 0)
    }
}
