import Config
import Events
import Foundation
import Gateway
import Kafka
import Rejections
import TestSupport
import Testing
import Toolkit
import Verifiers

/// Real deliveries of every sender through the gateway, with Kafka up and with Kafka
/// down (the spool takes them, the relay publishes them later), then a search of every record (key,
/// value, header names and values) on every topic, of the spool's files on disk and of every line the
/// gateway logged, for each configured secret, token and key. Apple's configuration holds none (public
/// roots, bundle ids); its deliveries run beside the others all the same.
@Suite("No credential reaches a topic, the spool or a log line", .serialized)
struct NoCredentialsTests {
    static let apiToken = "api-token-0123456789-abcdef"
    static let bundleId = "com.example.nocredentials"

    struct Run {
        let harness: GatewayHarness
        let log: CapturedLog
        let secrets: [String]
    }

    static func start(spool: Bool) async throws -> (Run, AppleTestChain) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-no-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let chain = try await offPool { try AppleTestChain() }
        let rootPath = folder.appendingPathComponent("root.pem")
        try Data(chain.root.pem.utf8).write(to: rootPath)
        let platformPEM = try #require(await offPool { AlipayPlusEndToEndTests.platformKey.publicKeyPEM })
        let merchantPEM = await offPool { AlipayPlusEndToEndTests.merchantPEM }
        let platformPath = folder.appendingPathComponent("platform.pem")
        let merchantPath = folder.appendingPathComponent("merchant.pem")
        try Data(platformPEM.utf8).write(to: platformPath)
        try Data(merchantPEM.utf8).write(to: merchantPath)
        let keys = try #require(await GoogleEndToEndTests.keys.value)

        var apple = AppleSettings()
        apple.roots = [rootPath.path]
        apple.apps = [AppleSettings.App(bundleId: bundleId, appAppleId: 1234, environments: ["Sandbox"])]
        let log = CapturedLog()
        let harness = try await GatewayHarness(ackTimeoutMs: spool ? 1_000 : 5_000, apple: apple,
                                               spool: spool ? (folder.appendingPathComponent("spool.sqlite").path, 100_000_000) : nil,
                                               configure: { sources in
            sources.citcon.accounts = [CitconSettings.Account(name: "shop", secrets: [CitconEndToEndTests.secret],
                                                              tokens: [CitconEndToEndTests.token])]
            sources.alipayplus.clients = [AlipayPlusSettings.Client(
                clientId: AlipayPlusEndToEndTests.clientId, platformPublicKeys: [.init(path: platformPath.path, keyVersion: 1)],
                merchantPrivateKey: merchantPath.path, merchantKeyVersion: 1)]
            sources.google.audience = GoogleEndToEndTests.audience
            sources.google.serviceAccountEmail = GoogleEndToEndTests.email
            sources.google.packages = ["com.some.thing"]
            sources.google.jwks = keys.jwksPath
        }, configureAll: { config in config.api.tokens = [APIToken(apiToken)] }, log: log)

        // The merchant key's base64 lines: any of them in the output would be the key leaking.
        let merchantKeyLines = merchantPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") && $0.count >= 32 }.map(String.init)
        let token = GoogleEndToEndTests.token(keys)
        let secrets = [CitconEndToEndTests.secret, CitconEndToEndTests.token, GatewayHarness.secret, apiToken, token,
                       String(token.split(separator: ".").last ?? "")] + merchantKeyLines
        return (Run(harness: harness, log: log, secrets: secrets), chain)
    }

    /// One delivery of each kind every sender sends, and a few refusals.
    static func deliver(_ run: Run, chain: AppleTestChain) async throws {
        let client = run.harness.client
        let json = ["Content-Type": "application/json"]
        let form = ["Content-Type": "application/x-www-form-urlencoded"]
        var statuses: [String: Int] = [:]
        statuses["citcon upi"] = try await client.request("POST", "/webhooks/citcon/shop", headers: json, body: CitconEndToEndTests.upi()).status
        statuses["citcon chop"] = try await client.request("POST", "/webhooks/citcon/shop", headers: form, body: CitconEndToEndTests.legacy()).status
        statuses["iaptic renewal"] = try await run.harness.postIaptic(Bodies.renewal()).status
        statuses["iaptic test"] = try await run.harness.postIaptic(#"{"type":"test","password":"\#(GatewayHarness.secret)"}"#).status
        statuses["iaptic other"] = try await run.harness.postIaptic(#"{"type":"subscriber.deleted","password":"\#(GatewayHarness.secret)","applicationUsername":"u-9"}"#).status
        let time = Timestamp.now.rfc3339
        let alipayBody = AlipayPlusEndToEndTests.body
        statuses["alipayplus"] = try await client.request("POST", "/webhooks/alipayplus", headers: AlipayPlusEndToEndTests.headers(
            path: "/webhooks/alipayplus", time: time, body: alipayBody), body: alipayBody).status
        let tokenSecrets = run.secrets.filter { $0.split(separator: ".").count == 3 }
        let token = try #require(tokenSecrets.first)
        let bearer = ["Content-Type": "application/json", "Authorization": "Bearer \(token)"]
        statuses["google wrapped"] = try await client.request("POST", "/webhooks/google", headers: bearer,
                                                              body: GoogleEndToEndTests.envelope(GoogleEndToEndTests.renewed, messageId: "801")).status
        statuses["google unwrapped"] = try await client.request("POST", "/webhooks/google", headers: bearer.merging([
            "x-goog-pubsub-message-id": "802", "x-goog-pubsub-subscription-name": "projects/p/subscriptions/rtdn"]) { $1 },
            body: GoogleEndToEndTests.renewed).status
        statuses["google quarantined"] = try await client.request("POST", "/webhooks/google", headers: bearer,
                                                                  body: GoogleEndToEndTests.envelope("not an rtdn", messageId: "803")).status
        let apple = try chain.loadDelivery(1, run: UUID().uuidString.prefix(8).description, bundleId: bundleId)
        statuses["apple"] = try await client.request("POST", "/webhooks/apple", headers: json, body: apple.body).status
        for (name, status) in statuses { #expect(status == 200, "\(name) answered \(status)") }

        // Refusals log their reason and detail: none of them may echo a credential.
        #expect(try await run.harness.postIaptic(#"{"type":"purchases.updated","password":"\#(GatewayHarness.secret)","purchases":[1]}"#).status == 400)
        #expect(try await client.request("POST", "/webhooks/citcon/shop", headers: json,
                                         body: CitconEndToEndTests.upi(secret: "not-the-secret")).status == 401)
        #expect(try await client.request("POST", "/webhooks/google", headers: bearer, body: GoogleEndToEndTests.envelope(
            GoogleEndToEndTests.renewed.replacingOccurrences(of: "com.some.thing", with: "com.not.configured"))).status == 403)
    }

    /// Every record on every topic the gateway writes, as bytes: key, value, header names and values.
    static func topicBytes(_ harness: GatewayHarness) async throws -> [(String, [UInt8])] {
        var found: [(String, [UInt8])] = []
        for topic in harness.topics.all.map(\.name) {
            for record in try await TopicRecords.read(topic, bootstrap: harness.cluster.bootstrapServers) {
                let at = "\(topic) \(record.partition):\(record.offset)"
                found.append(("\(at) key", record.key ?? []))
                found.append(("\(at) value", record.value))
                for header in record.headers {
                    found.append(("\(at) header \(header.name)", Array(header.name.utf8) + (header.value ?? [])))
                }
            }
        }
        return found
    }

    static func expectNoSecret(_ secrets: [String], in places: [(String, [UInt8])]) {
        for secret in secrets where !secret.isEmpty {
            let needle = Array(secret.utf8)
            for (place, bytes) in places where bytes.count >= needle.count {
                let found = (0...(bytes.count - needle.count)).contains { start in bytes[start..<(start + needle.count)].elementsEqual(needle) }
                #expect(!found, "a configured credential (\(secret.prefix(4))...) is in \(place)")
            }
        }
    }

    @Test("Kafka up: no configured secret, token or key is in any record on any topic or in any log line")
    func kafkaUp() async throws {
        let (run, chain) = try await Self.start(spool: false)
        try await Self.deliver(run, chain: chain)
        let records = try await Self.topicBytes(run.harness)
        #expect(records.contains { $0.0.contains("tollgate.raw.iaptic") }, "the Iaptic deliveries reached their raw topic")
        await run.harness.stop()
        Self.expectNoSecret(run.secrets, in: records)
        Self.expectNoSecret(run.secrets, in: run.log.all.enumerated().map { ("log line \($0.offset)", Array($0.element.utf8)) })
        #expect(!run.log.all.isEmpty, "the gateway's log lines were captured")
    }

    @Test("Kafka down: no configured secret, token or key is in the spool's files, then on any topic once relayed, or in any log line")
    func spooled() async throws {
        let (run, chain) = try await Self.start(spool: true)
        let harness = run.harness
        let spool = try #require(harness.spool)
        harness.cluster.setAllBrokers(up: false)
        try await Self.deliver(run, chain: chain)
        #expect(spool.stats.records >= 10, "the deliveries were spooled")
        var spooled: [(String, [UInt8])] = []
        for row in try await spool.oldest(limit: 1_000) {
            for message in row.messages {
                spooled.append(("spool row \(row.id) \(message.topic)",
                                (message.key ?? []) + message.value + message.headers.flatMap { Array($0.name.utf8) + ($0.value ?? []) }))
            }
        }
        for suffix in ["", "-wal", "-shm", "-journal"] {
            if let data = FileManager.default.contents(atPath: spool.path + suffix) { spooled.append(("spool file \(suffix)", Array(data))) }
        }
        Self.expectNoSecret(run.secrets, in: spooled)

        harness.cluster.setAllBrokers(up: true)
        #expect(try await eventually(timeout: .seconds(60)) { spool.isEmpty }, "the relay published the spooled deliveries")
        let records = try await Self.topicBytes(harness)
        #expect(records.contains { $0.0.contains("tollgate.raw.iaptic") })
        await harness.stop()
        Self.expectNoSecret(run.secrets, in: records)
        Self.expectNoSecret(run.secrets, in: run.log.all.enumerated().map { ("log line \($0.offset)", Array($0.element.utf8)) })
    }

    @Test("the Iaptic raw record keeps the body without password and the app, and replay's reverify reads it back to the same ids")
    func iapticRawRecordReplays() async throws {
        let harness = try await GatewayHarness()
        let body = Bodies.renewal()
        #expect(try await harness.postIaptic(body).status == 200)
        let raw = try #require(try await TopicRecords.read(harness.topics.raw(.iaptic), bootstrap: harness.cluster.bootstrapServers).first)
        let events = try await TopicRecords.read(harness.topics.events, bootstrap: harness.cluster.bootstrapServers)
        await harness.stop()
        let kept = try #require(JSONValue.parse(raw.value)?.object)
        let sent = try #require(JSONValue.parse(Array(body.utf8))?.object)
        #expect(kept["password"] == nil)
        #expect(kept.count == sent.count - 1)
        for (name, value) in sent where name != "password" { #expect(kept[name] == value, "\(name) is kept as sent") }
        #expect(raw.headerString("tollgate_authenticated_scope") == "shop")

        // `tollgate replay`: the record read back into a request and re-verified offline.
        let source = IapticSource(settings: { var s = IapticSettings(); s.apps = [.init(name: "shop", secrets: [GatewayHarness.secret])]; return s }())
        let request = RawDeliveryHeaders.request(body: raw.value, headers: raw.headers.map { ($0.name, $0.stringValue) },
                                                 timestampMs: raw.timestampMs, source: .iaptic)
        let replayed = try await source.reverify(request)
        #expect(replayed.events.map(\.id) == events.compactMap { $0.headerString("ce_id") })
        // Without the recorded app, or naming an app that is not configured, there is nothing to trust.
        var anonymous = request
        anonymous.authenticatedScope = nil
        await #expect(throws: Rejection.self) { try await source.reverify(anonymous) }
        anonymous.authenticatedScope = "stranger"
        await #expect(throws: Rejection.self) { try await source.reverify(anonymous) }
    }
}
