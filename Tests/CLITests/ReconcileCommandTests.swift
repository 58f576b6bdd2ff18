import Events
import Foundation
import TestSupport
import Testing
import Toolkit
import Verifiers

/// `tollgate reconcile apple` as users run it, against a local Apple (its notification history, the JWT
/// checked as Apple does) with the workers' configuration: a dry run reads and verifies, publishes nothing.
@Suite("tollgate reconcile apple")
struct ReconcileCommandTests {
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"
    static let bundleId = "com.example.reconcile"

    struct Setup {
        let fake: FakeAppStoreAPI
        let directory: URL
        let configPath: String
        let uuid: String
    }

    static func setUp(clientKey: PrivateKey? = nil) throws -> Setup {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-reconcile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let chain = try AppleTestChain()
        let rootPath = directory.appendingPathComponent("apple-root.pem").path
        try Data(chain.root.pem.utf8).write(to: URL(fileURLWithPath: rootPath))
        let key = try #require(PrivateKey.generateP256())
        let fake = FakeAppStoreAPI(publicKey: try #require(key.publicKey), issuerId: issuerId, keyId: keyId, bundleId: bundleId)
        let p8 = directory.appendingPathComponent("SubscriptionKey.p8")
        try Data(try #require((clientKey ?? key).pem).utf8).write(to: p8)
        let uuid = UUID().uuidString.lowercased()
        let signed = try chain.sign(AppleBodies.notification(type: "TEST", environment: "Sandbox", bundleId: bundleId, appAppleId: 1234,
                                                             signedDate: Timestamp.now.millisecondsSince1970, status: nil, notificationUUID: uuid))
        fake.store(#"{"hasMore":false,"notificationHistory":[{"signedPayload":"\#(signed)"}]}"#, at: "/sandbox/inApps/v1/notifications/history")
        let config = """
            store: { url: "sqlite:\(directory.appendingPathComponent("store.sqlite").path)" }
            sources:
              apple:
                roots: [\(rootPath)]
                apps:
                  - bundleId: \(bundleId)
                    appAppleId: 1234
                    environments: [Sandbox]
                    serverApi: { issuerId: \(issuerId), keyId: \(keyId), privateKeyFile: \(p8.path) }
                serverApiEndpoints: { productionURL: "\(fake.productionURL)", sandboxURL: "\(fake.sandboxURL)", timeoutMs: 5000 }
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        return Setup(fake: fake, directory: directory, configPath: configPath, uuid: uuid)
    }

    static func run(_ setup: Setup, _ extra: [String]) async throws -> CLI.Result {
        // A dry run never connects to Kafka: no broker is needed at this address.
        try await CLI.run(["reconcile", "apple", "--config", setup.configPath, "--brokers", "127.0.0.1:1"] + extra, directory: setup.directory)
    }

    @Test("a dry run reads the history, verifies each notification and says what it would publish: exit 0")
    func dryRun() async throws {
        let setup = try Self.setUp()
        defer { setup.fake.stop() }
        let result = try await Self.run(setup, ["--dry-run", "--since", "2d"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout == "\(Self.bundleId)/Sandbox: 1 pages, 1 notifications, 1 new, 0 known, 0 rejected (dry run: nothing published)\n")
        #expect(setup.fake.jwtProblems.isEmpty)
        #expect(setup.fake.requests.map(\.method) == ["POST"])
    }

    @Test("a key Apple refuses: exit 1 with what to check, never the key")
    func refused() async throws {
        let setup = try Self.setUp(clientKey: PrivateKey.generateP256())
        defer { setup.fake.stop() }
        let result = try await Self.run(setup, ["--dry-run"])
        #expect(result.status == 1)
        #expect(result.stdout.contains("stopped: App Store Server API notification_history call failed (http_401"), "\(result.stdout)")
        #expect(result.stdout.contains("check its issuer id, key id and .p8"))
        #expect(!result.stdout.contains("BEGIN") && !result.stderr.contains("BEGIN"))
    }

    @Test("an app without a serverApi key is a usage error: exit 2")
    func unknownApp() async throws {
        let setup = try Self.setUp()
        defer { setup.fake.stop() }
        let result = try await Self.run(setup, ["--app", "com.example.other", "--dry-run"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("com.example.other has no sources.apple.apps[].serverApi key (apps with one: \(Self.bundleId))"))
    }
}
