import Events
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Verifiers
import TestSupport
import Testing
import Toolkit

extension DevEndToEndTests {
    /// `tollgate apple test-notification` against a local Apple that, asked for a test notification,
    /// signs one with the dev process's test chain and POSTs it to the gateway, as Apple does.
    @Suite("tollgate apple test-notification")
    struct AppleTestNotification {
        static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
        static let keyId = "2X9R4HXF34"
        static let requestTarget = "/sandbox/inApps/v1/notifications/test"
        static let token = "ce3af791-365e-4c60-841b-1674b43c1609_1698148900000"
        static var statusTarget: String { requestTarget + "/" + token }

        struct Setup {
            let fake: FakeAppStoreAPI
            let configPath: String
        }

        /// A fake Apple knowing `key`, and a configuration for the command: the dev process's Apple app,
        /// with a serverApi key (`clientKey`, by default the one Apple knows) and the fake's URLs.
        static func setUp(_ dev: DevProcess, clientKey: PrivateKey? = nil) throws -> Setup {
            let key = try #require(PrivateKey.generateP256())
            let fake = FakeAppStoreAPI(publicKey: try #require(key.publicKey), issuerId: issuerId, keyId: keyId, bundleId: DevProcess.bundleId)
            let p8 = dev.directory.appendingPathComponent("SubscriptionKey_\(UUID().uuidString).p8")
            try Data(try #require((clientKey ?? key).pem).utf8).write(to: p8)
            let config = """
                sources:
                  apple:
                    roots: [\(dev.directory.appendingPathComponent("apple-root.pem").path)]
                    apps:
                      - bundleId: \(DevProcess.bundleId)
                        appAppleId: 1234
                        environments: [Sandbox]
                        serverApi: { issuerId: \(issuerId), keyId: \(keyId), privateKeyFile: \(p8.path) }
                    serverApiEndpoints: { productionURL: "\(fake.productionURL)", sandboxURL: "\(fake.sandboxURL)", timeoutMs: 5000 }
                """
            let configPath = dev.directory.appendingPathComponent("apple-test-notification-\(UUID().uuidString).yaml").path
            try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
            return Setup(fake: fake, configPath: configPath)
        }

        static func run(_ dev: DevProcess, _ setup: Setup, _ extra: [String] = []) async throws -> CLI.Result {
            try await CLI.run(["apple", "test-notification", "--config", setup.configPath, "--brokers", dev.bootstrap] + extra,
                              directory: dev.directory)
        }

        /// A TEST notification signed with the dev process's chain, as Apple sends it.
        static func testNotification(_ dev: DevProcess) throws -> (uuid: String, signedPayload: String) {
            let uuid = UUID().uuidString.lowercased()
            let payload = AppleBodies.notification(type: "TEST", environment: "Sandbox", bundleId: DevProcess.bundleId, appAppleId: 1234,
                                                   signedDate: Timestamp.now.millisecondsSince1970, status: nil, notificationUUID: uuid)
            return (uuid, try dev.chain.sign(payload))
        }

        static func status(_ signedPayload: String, _ result: String) -> String {
            #"{"signedPayload":"\#(signedPayload)","sendAttempts":[{"attemptDate":\#(Timestamp.now.millisecondsSince1970),"sendAttemptResult":"\#(result)"}]}"#
        }

        @Test("Apple takes the request, delivers the notification to the gateway, and it is on tollgate.events: exit 0")
        func delivered() async throws {
            let dev = try DevEndToEndTests.dev()
            let setup = try Self.setUp(dev)
            defer { setup.fake.stop() }
            let (uuid, signed) = try Self.testNotification(dev)
            let gateway = dev.baseURL + "/webhooks/apple"
            let fake = setup.fake
            fake.handle(Self.requestTarget) { _ in
                // Apple's side: answer the request at once, then send the notification to the app's URL and
                // record the attempt (no attempt yet until then), as Apple does: on a busy machine the
                // delivery may take longer than the request's own deadline.
                fake.store(#"{"signedPayload":"\#(signed)","sendAttempts":[]}"#, at: Self.statusTarget)
                Thread.detachNewThread {
                    let status = Self.post(#"{"signedPayload":"\#(signed)"}"#, to: gateway)
                    fake.store(Self.status(signed, status == 200 ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"), at: Self.statusTarget)
                }
                return .json(200, #"{"testNotificationToken":"\#(Self.token)"}"#)
            }
            let result = try await Self.run(dev, setup)
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            if result.status == 0 { await dev.appleDeliveries.append(uuid, changesPurchases: false) }
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 3)
            #expect(lines.first == "1/3 Apple took the request for \(DevProcess.bundleId) (Sandbox)")
            #expect(lines.dropFirst().first?.hasPrefix("2/3 Apple delivered it at ") == true)
            #expect(lines.dropFirst().first?.hasSuffix("(ce_id apple:\(uuid))") == true)
            #expect(lines.last?.hasPrefix("3/3 the gateway published it to tollgate.events (partition ") == true)
            #expect(setup.fake.jwtProblems.isEmpty)
            #expect(setup.fake.requests.map(\.method).prefix(2) == ["POST", "GET"])
        }

        @Test("Apple could not reach the gateway: step 2 fails with Apple's results")
        func notDelivered() async throws {
            let dev = try DevEndToEndTests.dev()
            let setup = try Self.setUp(dev)
            defer { setup.fake.stop() }
            let (_, signed) = try Self.testNotification(dev)
            setup.fake.store(#"{"testNotificationToken":"\#(Self.token)"}"#, at: Self.requestTarget)
            setup.fake.store(Self.status(signed, "NO_RESPONSE"), at: Self.statusTarget)
            let result = try await Self.run(dev, setup, ["--timeout", "2"])
            #expect(result.status == 1)
            #expect(result.stdout.hasPrefix("1/3 Apple took the request"))
            #expect(result.stderr.contains("2/3 failed: Apple could not deliver it: NO_RESPONSE"), "\(result.stderr)")
        }

        @Test("Apple says it delivered, but nothing reached tollgate.events: step 3 fails")
        func notPublished() async throws {
            let dev = try DevEndToEndTests.dev()
            let setup = try Self.setUp(dev)
            defer { setup.fake.stop() }
            let (uuid, signed) = try Self.testNotification(dev)
            setup.fake.store(#"{"testNotificationToken":"\#(Self.token)"}"#, at: Self.requestTarget)
            setup.fake.store(Self.status(signed, "SUCCESS"), at: Self.statusTarget)
            let result = try await Self.run(dev, setup, ["--timeout", "2"])
            #expect(result.status == 1)
            #expect(result.stdout.contains("2/3 Apple delivered it"))
            #expect(result.stderr.contains("3/3 failed: Apple delivered it, but no record with ce_id apple:\(uuid) reached tollgate.events"),
                    "\(result.stderr)")
        }

        @Test("Apple refuses the key: step 1 fails and says what to check")
        func refused() async throws {
            let dev = try DevEndToEndTests.dev()
            let setup = try Self.setUp(dev, clientKey: PrivateKey.generateP256())
            defer { setup.fake.stop() }
            let result = try await Self.run(dev, setup)
            #expect(result.status == 1)
            #expect(result.stderr.contains("1/3 failed: Apple did not take the request for \(DevProcess.bundleId) (Sandbox): HTTP 401"),
                    "\(result.stderr)")
            #expect(result.stderr.contains("check the key's issuer id, key id and .p8"))
            #expect(!result.stderr.contains("BEGIN"))
        }

        @Test("an app without a serverApi key, or an unknown one, is a usage error")
        func unknownApp() async throws {
            let dev = try DevEndToEndTests.dev()
            let setup = try Self.setUp(dev)
            defer { setup.fake.stop() }
            let result = try await Self.run(dev, setup, ["--app", "com.example.other"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("com.example.other has no sources.apple.apps[].serverApi key (apps with one: \(DevProcess.bundleId))"))
        }

        /// A blocking POST from the fake's own thread (never a pool thread): Apple sending the notification.
        static func post(_ body: String, to url: String) -> Int {
            guard let target = URL(string: url) else { return 0 }
            var request = URLRequest(url: target)
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            let done = DispatchSemaphore(value: 0)
            let status = StatusBox()
            URLSession.shared.dataTask(with: request) { _, response, _ in
                status.set((response as? HTTPURLResponse)?.statusCode ?? 0)
                done.signal()
            }.resume()
            done.wait()
            return status.value
        }

        final class StatusBox: @unchecked Sendable {
            private let lock = NSLock()
            private var status = 0
            func set(_ value: Int) { lock.withLock { status = value } }
            var value: Int { lock.withLock { status } }
        }
    }
}
