import Foundation
import Outbound
import Store
import StoreTestSupport
import TestSupport
import Verifiers
import Events
import Testing
import Toolkit

/// Outbound webhooks from a real `tollgate dev` to `scripts/webhook-receiver.py`, an HTTPS endpoint that
/// verifies every delivery with the `standardwebhooks` package from PyPI. Iaptic callbacks go in
/// through the webhook route; what the endpoint receives, and the store's record of every attempt, come out.
@Suite("Outbound webhooks from tollgate dev")
struct OutboundWebhookTests {
    static let iapticSecret = "outbound-iaptic-secret-0123456789"

    /// A folder, its TLS chain for `localhost`, and two signing secrets (a rotation: the receiver holds the second).
    struct Setup {
        let directory: URL
        let chain: TestTLSChain
        let secrets = [WebhookSecretText.generate(), WebhookSecretText.generate()]
        var store: String { "sqlite:" + directory.appendingPathComponent("store.sqlite").path }

        static func make() async throws -> Setup {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-webhooks-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return Setup(directory: directory, chain: try await TestTLSChain.make(in: directory, names: ["localhost"], addresses: ["127.0.0.1"]))
        }

        /// `endpoints`: YAML list items (each `{...}`), besides the ones every test names.
        func config(endpoints: [String], schedule: [Int] = [0, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100],
                    extra: String = "", sources: String = "") throws -> String {
            let config = """
                http: { host: 127.0.0.1, port: 0 }
                store: { url: "\(store)" }
                log: { level: error }
                sources: { iaptic: { apps: [{ name: hooks, secrets: [\(OutboundWebhookTests.iapticSecret)] }] }\(sources.isEmpty ? "" : ", " + sources) }
                webhooks:
                  allowLoopback: true
                  caFile: \(chain.caFile)
                  retryScheduleMs: [\(schedule.map(String.init).joined(separator: ", "))]
                \(extra)
                  endpoints:
                \(endpoints.map { "    - " + $0 }.joined(separator: "\n"))
                """
            let path = directory.appendingPathComponent("tollgate.yaml").path
            try Data(config.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    @Test("every delivery verifies with standardwebhooks; each user's arrive in the order applied; one failing holds back only its own user's, then all arrive once it answers")
    func orderedAndVerified() async throws {
        let setup = try await Setup.make()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let release = setup.directory.appendingPathComponent("release").path
        let receiver = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[1], directory: setup.directory,
                                                 failUsers: ["alice"], releaseFile: release)
        defer { receiver.stop() }
        let config = try setup.config(endpoints: [
            // A host in another case: still pinned to the address checked, still verified as localhost.
            #"{ name: merchant, url: "https://LocalHost:\#(receiver.port)/hooks?tenant=1", secrets: [\#(setup.secrets[0]), \#(setup.secrets[1])] }"#,
        ])
        let fetcher = HTTPClientFetcher()
        try await withOwnDev(configPath: config, directory: setup.directory) { base in
            _ = try await eventually("the gateway is ready") {
                try await fetcher.fetch(HTTPFetchRequest(url: base + "/readyz", timeout: .seconds(5))).status == 200 ? true : nil
            }
            // Alternately, five changes of alice's purchase and five of bob's.
            for step in 0..<5 {
                for user in ["alice", "bob"] {
                    let answer = try await Self.post(base, fetcher: fetcher, user: user, step: step)
                    #expect(answer == 200)
                }
            }
            // Bob's five arrive while alice's first is refused again and again.
            let bob = try await eventually("bob's deliveries arrive") { () throws -> [WebhookReceiver.Delivery]? in
                let received = try receiver.deliveries.filter { $0.user == "bob" }
                return received.count >= 5 ? received : nil
            }
            #expect(Self.eventIds(bob) == (0..<5).map { Self.eventId(user: "bob", step: $0) }, "in the order applied")
            let aliceSoFar = try await eventually("alice's first is tried again") { () throws -> [WebhookReceiver.Delivery]? in
                let tries = try receiver.deliveries.filter { $0.user == "alice" }
                return tries.count >= 3 ? tries : nil
            }
            #expect(Set(aliceSoFar.map(\.id)).count == 1, "only her first message, the same webhook-id on every attempt: \(aliceSoFar.map(\.id))")
            #expect(aliceSoFar.allSatisfy { $0.answer == 503 } && Set(Self.eventIds(aliceSoFar)) == [Self.eventId(user: "alice", step: 0)])

            try Data().write(to: URL(fileURLWithPath: release))
            let alice = try await eventually("alice's deliveries arrive once her endpoint answers") { () throws -> [WebhookReceiver.Delivery]? in
                let accepted = try receiver.deliveries.filter { $0.user == "alice" && $0.answer == 204 }
                return accepted.count >= 5 ? accepted : nil
            }
            #expect(Self.eventIds(alice) == (0..<5).map { Self.eventId(user: "alice", step: $0) }, "in the order applied")

            let all = try receiver.deliveries
            #expect(all.allSatisfy { $0.verified }, "standardwebhooks verifies every delivery with the second secret")
            #expect(all.allSatisfy { $0.signatures?.count == 2 && $0.signatures?.allSatisfy { $0.hasPrefix("v1,") } == true }, "one v1 signature per secret")
            #expect(all.allSatisfy { $0.contentType == "application/cloudevents+json" && $0.specversion == "1.0" })
            #expect(all.allSatisfy { $0.schemaErrors == [] }, "the event and the entitlement hold to docs/schemas: \(all.compactMap(\.schemaErrors).flatMap { $0 })")
            #expect(all.allSatisfy { ($0.ceId ?? "") == $0.id }, "the CloudEvent's id is the message's")
            #expect(all.allSatisfy { $0.ceType == "dev.tollgate.subscription.renewed" || $0.ceType == "dev.tollgate.subscription.started" })
            // The purchase by its opaque id, in the attributes and the event: never the store's own id.
            #expect(all.allSatisfy { ($0.ceSubject ?? "").hasPrefix("pur_") && $0.ceSubject == $0.purchaseId && $0.eventSubject == $0.purchaseId })
            // Event ids leave opaque: some carry a purchase token. One per event, whatever the attempt.
            #expect(all.allSatisfy { ($0.eventId ?? "").hasPrefix("evt_") && $0.eventId == $0.entitlementEventId })
            #expect(Set(all.compactMap(\.eventId)).count == 10)
            #expect(all.allSatisfy { $0.active == true && $0.product == "premium" })
            let sequences = (alice + bob).compactMap(\.sequence)
            #expect(Set(sequences).count == 10)
            // Each message delivered once with a 2xx.
            #expect(Set(all.filter { $0.answer == 204 }.compactMap(\.id)).count == all.filter { $0.answer == 204 }.count)

            // Every attempt is in the store: alice's refusals with their status and the endpoint's answer.
            let database = try await SQLDatabase.open(url: setup.store, logger: TestDatabases.logger)
            defer { Task { await database.close() } }
            let attempts = try await database.read { connection throws(StoreError) in
                try connection.query("SELECT outcome, status_code, excerpt, attempt FROM webhook_attempts WHERE endpoint = 'merchant' ORDER BY id")
            }
            #expect(attempts.count == all.count)
            let refused = attempts.filter { $0.text("outcome") == "http_status" }
            #expect(refused.count == aliceSoFar.count + (all.filter { $0.answer == 503 }.count - aliceSoFar.count))
            #expect(refused.allSatisfy { $0.int("status_code") == 503 && ($0.text("excerpt") ?? "").contains("received") })
            #expect(attempts.filter { $0.text("outcome") == "delivered" }.count == 10)
        }
    }

    @Test("a failing endpoint's message is retried on the schedule, honours Retry-After and is parked after its last attempt; redirects are not followed; a certificate for another name, a private address and an endpoint that never answers fail their attempts")
    func retriesParkingAndBadEndpoints() async throws {
        let setup = try await Setup.make()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let failing = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[0], directory: setup.directory, name: "failing",
                                                status: 500)
        defer { failing.stop() }
        let redirecting = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[0], directory: setup.directory, name: "redirect",
                                                    status: 307)
        defer { redirecting.stop() }
        let limited = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[0], directory: setup.directory, name: "limited",
                                                failUsers: ["carol"], releaseFile: setup.directory.appendingPathComponent("never").path,
                                                retryAfter: 2)
        defer { limited.stop() }
        let otherName = try await TestTLSChain.make(in: setup.directory, names: ["wrong.example"], label: "other")
        let mismatched = try await WebhookReceiver(chain: otherName, secret: setup.secrets[0], directory: setup.directory, name: "mismatch")
        defer { mismatched.stop() }
        // A 200 with a long page: delivered (the status decides; the answer is only quoted).
        let verbose = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[0], directory: setup.directory, name: "verbose",
                                                status: 200, answerBytes: 200_000)
        defer { verbose.stop() }
        // A 200 whose body stalls past the timeout: still delivered (the status came).
        let stalling = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[0], directory: setup.directory, name: "stalling",
                                                 status: 200, stallBody: true)
        defer { stalling.stop() }
        // Accepts connections (the kernel's backlog) and never answers: the TLS handshake waits.
        let silent = LoopbackListener()
        let secret = setup.secrets[0]
        let config = try setup.config(endpoints: [
            #"{ name: failing, url: "https://localhost:\#(failing.port)/", secrets: [\#(secret)] }"#,
            #"{ name: redirect, url: "https://localhost:\#(redirecting.port)/", secrets: [\#(secret)] }"#,
            #"{ name: limited, url: "https://localhost:\#(limited.port)/", secrets: [\#(secret)] }"#,
            #"{ name: mismatch, url: "https://localhost:\#(mismatched.port)/", secrets: [\#(secret)] }"#,
            #"{ name: private, url: "https://10.255.255.1/hooks", secrets: [\#(secret)] }"#,
            #"{ name: silent, url: "https://127.0.0.1:\#(silent.port)/", secrets: [\#(secret)], timeoutMs: 300 }"#,
            #"{ name: verbose, url: "https://localhost:\#(verbose.port)/", secrets: [\#(secret)] }"#,
            #"{ name: stalling, url: "https://localhost:\#(stalling.port)/", secrets: [\#(secret)], timeoutMs: 500 }"#,
        ], schedule: [0, 100, 100])
        let fetcher = HTTPClientFetcher()
        try await withOwnDev(configPath: config, directory: setup.directory) { base in
            _ = try await eventually("the gateway is ready") {
                try await fetcher.fetch(HTTPFetchRequest(url: base + "/readyz", timeout: .seconds(5))).status == 200 ? true : nil
            }
            #expect(try await Self.post(base, fetcher: fetcher, user: "carol", step: 0) == 200)
            let database = try await SQLDatabase.open(url: setup.store, logger: TestDatabases.logger)
            defer { Task { await database.close() } }
            // Three attempts each (the schedule's length), then parked; the limited endpoint waits as it asks.
            let states = try await eventually("every endpoint's message is parked", within: .seconds(60)) { () async throws -> [String: String]? in
                let rows = try await database.read { connection throws(StoreError) in
                    try connection.query("SELECT endpoint, status, attempts FROM webhook_deliveries")
                }
                let states = Dictionary(rows.compactMap { row in row.text("endpoint").map { ($0, "\(row.text("status") ?? "")/\(row.int("attempts") ?? 0)") } },
                                        uniquingKeysWith: { first, _ in first })
                return states.count == 8 && states.filter { !["verbose", "stalling"].contains($0.key) }.values.allSatisfy { $0 == "parked/3" }
                    ? states : nil
            }
            #expect(states["verbose"] == "delivered/1" && states["stalling"] == "delivered/1")
            let attempts = try await database.read { connection throws(StoreError) in
                try connection.query("SELECT endpoint, outcome, status_code, attempted_at_ms, excerpt FROM webhook_attempts ORDER BY id")
            }
            func outcomes(_ endpoint: String) -> [String] { attempts.filter { $0.text("endpoint") == endpoint }.compactMap { $0.text("outcome") } }
            #expect(outcomes("failing") == ["http_status", "http_status", "http_status"])
            #expect(outcomes("redirect") == ["http_status", "http_status", "http_status"])
            #expect(attempts.filter { $0.text("endpoint") == "redirect" }.allSatisfy { $0.int("status_code") == 307 })
            #expect(outcomes("mismatch") == ["connection", "connection", "connection"])
            #expect(outcomes("private") == ["address_refused", "address_refused", "address_refused"])
            #expect(outcomes("silent") == ["timeout", "timeout", "timeout"])
            #expect(outcomes("verbose") == ["delivered"])
            #expect(attempts.filter { $0.text("endpoint") == "verbose" }.allSatisfy { ($0.text("excerpt") ?? "").utf8.count <= 256 })
            // Retry-After: 2 s, where the schedule says 100 ms.
            let limitedTimes = attempts.filter { $0.text("endpoint") == "limited" }.compactMap { $0.int("attempted_at_ms") }
            #expect(limitedTimes.count == 3)
            if limitedTimes.count == 3 {
                #expect(limitedTimes[1] - limitedTimes[0] >= 1_900 && limitedTimes[2] - limitedTimes[1] >= 1_900, "\(limitedTimes)")
            }
            // The endpoints that never saw a request did not: no request reached a receiver for another name.
            #expect(try mismatched.deliveries.isEmpty)
            #expect(try redirecting.deliveries.count == 3 && (try failing.deliveries.count) == 3)
            // No excerpt quotes a URL.
            #expect(attempts.allSatisfy { !($0.text("excerpt") ?? "").contains("localhost") && !($0.text("excerpt") ?? "").contains("10.255") })

            let metrics = String(decoding: try await fetcher.fetch(HTTPFetchRequest(url: base + "/metrics", timeout: .seconds(5))).body, as: UTF8.self)
            #expect(metrics.contains(#"tollgate_webhook_parked_total{endpoint="failing"} 1"#), "\(metrics.split(separator: "\n").filter { $0.contains("webhook") })")
            #expect(metrics.contains(#"tollgate_webhook_attempts_total{endpoint="private",outcome="address_refused"} 3"#))
        }
    }

    @Test("an endpoint failing for webhooks.disableAfterSeconds is disabled; after a kill -9, enabled again, it resumes where it stopped and loses nothing; the operator's commands list, show and replay")
    func disabledKilledResumed() async throws {
        let setup = try await Setup.make()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let release = setup.directory.appendingPathComponent("release").path
        let receiver = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[0], directory: setup.directory,
                                                 failUsers: ["dave"], releaseFile: release)
        defer { receiver.stop() }
        let config = try setup.config(endpoints: [
            #"{ name: merchant, url: "https://localhost:\#(receiver.port)/", secrets: [\#(setup.secrets[0])] }"#,
        ], schedule: Array(repeating: 300, count: 30), extra: "  disableAfterSeconds: 1")
        let fetcher = HTTPClientFetcher()
        let database = try await SQLDatabase.open(url: setup.store, logger: TestDatabases.logger)
        defer { Task { await database.close() } }
        try await withOwnDev(configPath: config, directory: setup.directory) { base, child in
            _ = try await eventually("the gateway is ready") {
                try await fetcher.fetch(HTTPFetchRequest(url: base + "/readyz", timeout: .seconds(5))).status == 200 ? true : nil
            }
            for step in 0..<3 { #expect(try await Self.post(base, fetcher: fetcher, user: "dave", step: step) == 200) }
            _ = try await eventually("the endpoint is disabled for failing") { () async throws -> Bool? in
                let rows = try await database.read { connection throws(StoreError) in
                    try connection.query("SELECT disabled, disabled_reason FROM webhook_endpoints WHERE endpoint = 'merchant'")
                }
                return rows.first?.int("disabled") == 1 && rows.first?.text("disabled_reason") == "failing" ? true : nil
            }
            let metrics = try await eventually("the gauges say so") { () async throws -> String? in
                let text = String(decoding: try await fetcher.fetch(HTTPFetchRequest(url: base + "/metrics", timeout: .seconds(5))).body, as: UTF8.self)
                return text.contains(#"tollgate_webhook_endpoint_enabled{endpoint="merchant"} 0"#) ? text : nil
            }
            #expect(metrics.contains(#"tollgate_webhook_endpoint_disabled_total{endpoint="merchant"} 1"#))
            #expect(metrics.contains(#"tollgate_webhook_pending{endpoint="merchant"} 3"#))
            let list = try await CLI.run(["webhooks", "list", "--config", config], directory: setup.directory)
            #expect(list.status == 0 && list.stdout.contains("disabled (failing)"), "\(list.stdout)\(list.stderr)")
            #expect(!list.stdout.contains("/hooks") && list.stdout.contains("https://localhost:\(receiver.port)"))
            await child.crash()
        }
        let before = try receiver.deliveries
        #expect(before.count >= 2 && before.allSatisfy { $0.answer == 503 })
        try Data().write(to: URL(fileURLWithPath: release))
        let enabled = try await CLI.run(["webhooks", "enable", "--endpoint", "merchant", "--config", config], directory: setup.directory)
        #expect(enabled.status == 0, "\(enabled.stderr)")

        try await withOwnDev(configPath: config, directory: setup.directory) { base in
            let delivered = try await eventually("dave's three messages arrive, in order, after the restart") { () throws -> [WebhookReceiver.Delivery]? in
                let accepted = try receiver.deliveries.filter { $0.answer == 204 }
                return accepted.count >= 3 ? accepted : nil
            }
            #expect(Self.eventIds(delivered) == (0..<3).map { Self.eventId(user: "dave", step: $0) })
            let attempts = try await CLI.run(["webhooks", "attempts", "--endpoint", "merchant", "--since", "1h", "--config", config],
                                             directory: setup.directory)
            #expect(attempts.status == 0 && attempts.stdout.contains("http_status") && attempts.stdout.contains("delivered"), "\(attempts.stdout)")
            let first = try #require(delivered.first?.id)
            let dry = try await CLI.run(["webhooks", "replay", "--endpoint", "merchant", "--message", first, "--dry-run", "--config", config],
                                        directory: setup.directory)
            #expect(dry.status == 0 && dry.stdout.contains(first), "\(dry.stdout)\(dry.stderr)")
            let bySubject = try await CLI.run(["webhooks", "attempts", "--endpoint", "merchant", "--subject", try #require(delivered.first?.purchaseId),
                                               "--config", config], directory: setup.directory)
            #expect(bySubject.stdout.contains(first), "\(bySubject.stdout)")
            let replayed = try await CLI.run(["webhooks", "replay", "--endpoint", "merchant", "--message", first, "--config", config],
                                             directory: setup.directory)
            #expect(replayed.status == 0 && replayed.stderr.contains("queued 1"), "\(replayed.stderr)")
            _ = try await eventually("the replayed message arrives again, with its id") { () throws -> Bool? in
                try receiver.deliveries.filter { $0.answer == 204 && $0.id == first }.count == 2 ? true : nil
            }
            _ = base
        }
    }

    @Test("a worker killed with an attempt in flight: once the attempt's claim lapses, the restarted worker sends the message again, with its id")
    func killedMidAttempt() async throws {
        let setup = try await Setup.make()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let hold = setup.directory.appendingPathComponent("hold").path
        try Data().write(to: URL(fileURLWithPath: hold))
        let receiver = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[0], directory: setup.directory, holdFile: hold)
        defer { receiver.stop() }
        // A one-second timeout: the claim lapses 32 s after the attempt began (twice the timeout, and 30 s).
        let config = try setup.config(endpoints: [
            #"{ name: merchant, url: "https://localhost:\#(receiver.port)/", secrets: [\#(setup.secrets[0])], timeoutMs: 1000 }"#,
        ])
        let fetcher = HTTPClientFetcher()
        var held: WebhookReceiver.Delivery?
        try await withOwnDev(configPath: config, directory: setup.directory) { base, child in
            _ = try await eventually("the gateway is ready") {
                try await fetcher.fetch(HTTPFetchRequest(url: base + "/readyz", timeout: .seconds(5))).status == 200 ? true : nil
            }
            #expect(try await Self.post(base, fetcher: fetcher, user: "frank", step: 0) == 200)
            held = try await eventually("the attempt reaches the endpoint, which holds it") { () throws -> WebhookReceiver.Delivery? in
                try receiver.deliveries.first { $0.answer == 0 }
            }
            await child.crash()
        }
        try FileManager.default.removeItem(atPath: hold)
        let id = try #require(held?.id)
        try await withOwnDev(configPath: config, directory: setup.directory) { _ in
            let delivered = try await eventually("the message is sent again once its claim lapsed", within: .seconds(90)) { () throws -> WebhookReceiver.Delivery? in
                try receiver.deliveries.first { $0.answer == 204 }
            }
            #expect(delivered.id == id && delivered.verified && delivered.user == "frank", "the same message, with its id")
            #expect(try receiver.deliveries.filter { $0.answer == 204 }.count == 1)
        }
    }

    @Test("forward endpoints receive the senders' verified requests as they came, routed by sender and app, each once and in order per purchase; a refused request is not forwarded; an operator replays one")
    func forwardsVerifiedRequests() async throws {
        let setup = try await Setup.make()
        defer { try? FileManager.default.removeItem(at: setup.directory) }
        let apple = try AppleTestChain()
        let root = setup.directory.appendingPathComponent("apple-root.pem").path
        try Data(apple.root.pem.utf8).write(to: URL(fileURLWithPath: root))
        let vendor = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[0], directory: setup.directory, name: "vendor")
        defer { vendor.stop() }
        let staging = try await WebhookReceiver(chain: setup.chain, secret: setup.secrets[1], directory: setup.directory, name: "staging")
        defer { staging.stop() }
        let bundleId = "com.example.hooks"
        let config = try setup.config(endpoints: [
            // The old vendor keeps receiving Apple's notifications, at its own path; the staging stack every sender's.
            #"{ name: old-vendor, kind: forward, senders: [apple], url: "https://localhost:\#(vendor.port)/apple/v2?key=1", secrets: [\#(setup.secrets[0])] }"#,
            #"{ name: staging, kind: forward, url: "https://localhost:\#(staging.port)/", secrets: [\#(setup.secrets[1])] }"#,
            #"{ name: other-app, kind: forward, apps: [com.example.other], url: "https://localhost:\#(staging.port)/other", secrets: [\#(setup.secrets[1])] }"#,
        ], sources: "apple: { roots: [\(root)], apps: [{ bundleId: \(bundleId), appAppleId: 1234, environments: [Sandbox] }] }")
        let fetcher = HTTPClientFetcher()
        /// An Apple notification about purchase 7001, signed by `chain`, as Apple sends it.
        func notification(_ uuid: String, renewal: Int, chain: AppleTestChain) throws -> [UInt8] {
            let now = Timestamp.now.millisecondsSince1970
            let transaction = try chain.sign(AppleBodies.transaction(bundleId: bundleId, signedDate: now, originalTransactionId: "7001",
                                                                     transactionId: "700\(renewal + 1)", purchaseDate: now - 1_000,
                                                                     expiresDate: now + Int64(renewal + 1) * 86_400_000, appAccountToken: nil))
            let payload = AppleBodies.notification(bundleId: bundleId, signedDate: now, transactionJWS: transaction, notificationUUID: uuid)
            return Array(#"{"signedPayload":"\#(try chain.sign(payload))"}"#.utf8)
        }
        try await withOwnDev(configPath: config, directory: setup.directory) { base in
            _ = try await eventually("the gateway is ready") {
                try await fetcher.fetch(HTTPFetchRequest(url: base + "/readyz", timeout: .seconds(5))).status == 200 ? true : nil
            }
            func postApple(_ body: [UInt8]) async throws -> Int {
                try await fetcher.fetch(HTTPFetchRequest(url: base + "/webhooks/apple", method: "POST",
                                                         headers: [("Content-Type", "application/json"), ("User-Agent", "App Store Server Notifications"),
                                                                   ("X-Request-Id", "hop-1")],
                                                         body: body, timeout: .seconds(30))).status
            }
            let first = try notification(UUID().uuidString.lowercased(), renewal: 0, chain: apple)
            let second = try notification(UUID().uuidString.lowercased(), renewal: 1, chain: apple)
            #expect(try await Self.post(base, fetcher: fetcher, user: "erin", step: 0) == 200)
            #expect(try await postApple(first) == 200)
            #expect(try await postApple(first) == 200, "Apple sends a notification again until it is answered")
            // Signed by a chain the configuration does not trust: refused, never forwarded.
            #expect(try await postApple(try notification(UUID().uuidString.lowercased(), renewal: 5, chain: try AppleTestChain())) / 100 == 4)
            #expect(try await postApple(second) == 200)

            let forwarded = try await eventually("the old vendor receives Apple's two notifications") { () throws -> [WebhookReceiver.Delivery]? in
                let received = try vendor.deliveries
                return received.count >= 2 ? received : nil
            }
            let everything = try await eventually("the staging stack receives every sender's") { () throws -> [WebhookReceiver.Delivery]? in
                let received = try staging.deliveries
                return received.count >= 3 ? received : nil
            }
            // The same bytes, in the order of the purchase's notifications, each once (the repeat recorded nothing new).
            #expect(forwarded.map { $0.body ?? "" } == [first, second].map { String(decoding: $0, as: UTF8.self) })
            #expect(Set(forwarded.compactMap(\.id)).count == 2)
            #expect(forwarded.allSatisfy { $0.verified && $0.answer == 204 && $0.path == "/apple/v2?key=1" }, "verified by standardwebhooks at the vendor's own path")
            #expect(forwarded.allSatisfy { $0.headers?["content-type"] == "application/json" && $0.headers?["user-agent"] == "App Store Server Notifications" },
                    "the sender's own headers: \(forwarded.map { $0.headers ?? [:] })")
            #expect(forwarded.allSatisfy { $0.headers?["x-request-id"] == nil }, "what describes the hop to Tollgate stays behind")
            #expect(everything.allSatisfy { $0.verified && $0.path == "/" })
            #expect(Set(everything.compactMap(\.body)) == Set(forwarded.compactMap(\.body)).union(everything.filter { $0.body?.contains("purchases.updated") == true }.compactMap(\.body)))
            let iaptic = try #require(everything.first { $0.body?.contains("purchases.updated") == true })
            #expect(!(iaptic.body ?? "").contains(Self.iapticSecret), "the credential in Iaptic's body is not forwarded")
            #expect(everything.filter { $0.body?.contains("signedPayload") == true }.map(\.body) == forwarded.map(\.body), "in order at every endpoint")

            let database = try await SQLDatabase.open(url: setup.store, logger: TestDatabases.logger)
            defer { Task { await database.close() } }
            let rows = try await database.read { connection throws(StoreError) in
                try connection.query("SELECT endpoint, COUNT(*) AS n FROM webhook_deliveries GROUP BY endpoint ORDER BY endpoint")
            }
            #expect(rows.map { "\($0.text("endpoint") ?? "")=\($0.int("n") ?? 0)" } == ["old-vendor=2", "staging=3"], "no delivery for another app's endpoint")

            let list = try await CLI.run(["webhooks", "list", "--config", config], directory: setup.directory)
            #expect(list.status == 0 && list.stdout.split(separator: "\n").contains { $0.hasPrefix("old-vendor") && $0.contains("forward") }, "\(list.stdout)")
            let described = try await CLI.run(["describe", "--json", "--config", config], directory: setup.directory)
            let document = try JSONSerialization.jsonObject(with: Data(described.stdout.utf8)) as? [String: Any]
            let endpoints = document?["webhookEndpoints"] as? [[String: Any]] ?? []
            #expect(endpoints.contains { $0["name"] as? String == "old-vendor" && $0["kind"] as? String == "forward" && $0["senders"] as? [String] == ["apple"] },
                    "\(endpoints)")
            #expect(!described.stdout.contains("/apple/v2"), "never an endpoint's path")
            let id = try #require(forwarded.first?.id)
            let replayed = try await CLI.run(["webhooks", "replay", "--endpoint", "old-vendor", "--message", id, "--config", config],
                                             directory: setup.directory)
            #expect(replayed.status == 0 && replayed.stderr.contains("queued 1"), "\(replayed.stdout)\(replayed.stderr)")
            let again = try await eventually("the replayed request arrives again, with its id") { () throws -> WebhookReceiver.Delivery? in
                try vendor.deliveries.dropFirst(2).first
            }
            #expect(again.id == id && again.body == forwarded.first?.body && again.verified)
        }
    }

    /// What ends the id of the event of a user's step (its notification's id and its purchase's).
    static func eventId(user: String, step: Int) -> String { "ntf-\(user)-\(step):\(user)-sub" }

    /// The event ids the deliveries name are opaque (`evt_`): the test finds each by its step, which the
    /// entitlement's `expiresAt` carries (2099-01-0<step + 1>).
    static func eventIds(_ deliveries: [WebhookReceiver.Delivery]) -> [String] {
        deliveries.map { delivery in
            let step = (delivery.expiresAt ?? "").dropFirst("2099-01-0".count).first.flatMap { Int(String($0)) }.map { $0 - 1 }
            return "ntf-\(delivery.user ?? "")-\(step ?? -1):\(delivery.user ?? "")-sub"
        }
    }

    /// An Iaptic `purchases.updated` callback: the user's one subscription, renewed at each step.
    static func post(_ base: String, fetcher: HTTPClientFetcher, user: String, step: Int) async throws -> Int {
        let body = #"{"type":"purchases.updated","password":"\#(iapticSecret)","applicationUsername":"\#(user)","#
            + #""notification":{"id":"ntf-\#(user)-\#(step)","reason":"RENEWED","date":"2026-11-27T00:00:0\#(step).000Z"},"#
            + #""purchases":{"premium":{"purchaseId":"\#(user)-sub","transactionId":"\#(user)-\#(step)","productId":"premium","platform":"apple","#
            + #""purchaseDate":"2026-11-01T00:00:00.000Z","expirationDate":"2099-01-0\#(step + 1)T00:00:00.000Z","isExpired":false}}}"#
        return try await fetcher.fetch(HTTPFetchRequest(url: base + "/webhooks/iaptic", method: "POST", headers: [("Content-Type", "application/json")],
                                                        body: Array(body.utf8), timeout: .seconds(30))).status
    }
}

/// A `whsec_` secret as configuration takes it.
enum WebhookSecretText {
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        return "whsec_" + Base64.encodeStandard((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
