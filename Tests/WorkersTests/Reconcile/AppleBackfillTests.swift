import Config
import Entitlements
import Events
import Foundation
import Kafka
import Logging
import Outbound
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Apple "sends" notifications while no gateway receives them; its Get
/// Notification History (a local Apple answering as documented, checking the JWT) holds them, signed
/// with a chain the test generates. The backfill verifies each with the Apple sender, publishes what
/// was not processed to `tollgate.events`, and the real projection applies each exactly once.
@Suite("Apple notification backfill")
struct AppleBackfillTests {
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"
    static let bundleId = "com.example"
    static let day: Int64 = 86_400_000
    static let historyPath = "/inApps/v1/notifications/history"

    /// Apple's side: the chain it signs with, its API, and the notifications it sent.
    struct Apple {
        let chain: AppleTestChain
        let fake: FakeAppStoreAPI
        let client: AppStoreAPIClient
        /// Each notification's user (appAccountToken), uuid and signedPayload, in the order Apple sent them.
        let sent: [(user: String, uuid: String, signed: String)]

        func stop() { fake.stop() }

        /// The history as pages of `pageSize`, stored at the documented targets: the first page without a
        /// token, then `?paginationToken=page-<n>`.
        func storeHistory(pageSize: Int, environment: String = "production") {
            let pages = stride(from: 0, to: sent.count, by: pageSize).map { Array(sent[$0..<min($0 + pageSize, sent.count)]) }
            for (index, page) in pages.enumerated() {
                let items = page.map { #"{"signedPayload":"\#($0.signed)","sendAttempts":[{"attemptDate":1698148900000,"sendAttemptResult":"NO_RESPONSE"}]}"# }
                let more = index + 1 < pages.count
                let next = more ? #","paginationToken":"page-\#(index + 2)""# : ""
                fake.store(#"{"hasMore":\#(more)\#(next),"notificationHistory":[\#(items.joined(separator: ","))]}"#,
                           at: Self.target(environment, page: index + 1))
            }
        }

        static func target(_ environment: String = "production", page: Int) -> String {
            "/\(environment)" + AppleBackfillTests.historyPath + (page > 1 ? "?paginationToken=page-\(page)" : "")
        }

        /// The windows asked for, from the requests' bodies.
        var windows: [(start: Int64, end: Int64, onlyFailures: Bool?)] {
            fake.requests.compactMap { seen in
                guard let body = JSONValue.parse(seen.body), let start = body["startDate"]?.int64, let end = body["endDate"]?.int64 else { return nil }
                return (start, end, body["onlyFailures"]?.bool)
            }
        }
    }

    /// `count` SUBSCRIBED notifications, each for its own user, active for a month, as Apple signs them.
    static func apple(count: Int, environment: String = "Production", clientKey: PrivateKey? = nil) throws -> Apple {
        let key = try #require(PrivateKey.generateP256())
        let fake = FakeAppStoreAPI(publicKey: try #require(key.publicKey), issuerId: issuerId, keyId: keyId, bundleId: bundleId)
        let credentials = try AppStoreAPICredentials(issuerId: issuerId, keyId: keyId, bundleId: bundleId, privateKey: clientKey ?? key)
        var logger = Logger(label: "apple-backfill-test")
        logger.logLevel = .critical
        let client = AppStoreAPIClient(credentials: credentials, baseURLs: .init(production: fake.productionURL, sandbox: fake.sandboxURL),
                                       fetcher: HTTPClientFetcher(), timeout: .seconds(5), logger: logger)
        let chain = try AppleTestChain()
        let now = Timestamp.now.millisecondsSince1970
        var sent: [(user: String, uuid: String, signed: String)] = []
        for index in 0..<count {
            let user = UUID().uuidString.lowercased()
            let uuid = UUID().uuidString.lowercased()
            let originalTransactionId = String(700_000 + index)
            let transaction = try chain.sign(AppleBodies.transaction(
                environment: environment, bundleId: bundleId, signedDate: now - 60_000, originalTransactionId: originalTransactionId,
                transactionId: originalTransactionId + "1", purchaseDate: now - 60_000, expiresDate: now + 30 * day, appAccountToken: user))
            let notification = AppleBodies.notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY", environment: environment, bundleId: bundleId,
                                                        signedDate: now - 60_000, transactionJWS: transaction, notificationUUID: uuid)
            sent.append((user, uuid, try chain.sign(notification)))
        }
        return Apple(chain: chain, fake: fake, client: client, sent: sent)
    }

    static func backfill(_ apple: Apple, store: EntitlementStore, producer: KafkaProducer?, topic: String,
                         environments: [String] = ["Production"], metrics: MerchantMetrics = MerchantMetrics(factory: RecordingMetrics()),
                         slept: Sleeps = Sleeps()) -> AppleNotificationBackfill {
        let app = AppleSettings.App(bundleId: bundleId, appAppleId: 1234, environments: environments)
        var logger = Logger(label: "apple-backfill-test")
        logger.logLevel = .critical
        return AppleNotificationBackfill(clients: [bundleId: apple.client], apps: [app], source: apple.chain.source(apps: [app]), store: store,
                                         publisher: producer.map { KafkaEventPublisher(producer: $0, topic: topic) }, firstRunDays: 7, metrics: metrics, logger: logger,
                                         sleep: { duration in slept.values.withLock { $0.append(duration) } })
    }

    /// The waits the backfill asked for, instead of waiting.
    final class Sleeps: Sendable {
        let values = Mutex<[Duration]>([])
    }

    static func eventId(_ uuid: String) -> String { "apple:\(uuid)" }

    static func waitApplied(_ store: EntitlementStore, _ apple: Apple) async throws {
        try await waitUntil("every notification processed", timeout: .seconds(60)) {
            for sent in apple.sent where try await !store.hasProcessed(eventId: eventId(sent.uuid)) { return false }
            return true
        }
    }

    @Test("notifications the gateway never received are applied once each; those it did are known; a second run changes nothing",
          arguments: Backend.allCases)
    func appliesEachOnce(backend: Backend) async throws {
        let apple = try Self.apple(count: 7)
        defer { apple.stop() }
        apple.storeHistory(pageSize: 3)
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store) { workers async throws in
                    // The gateway was up for the first two: they are on tollgate.events and applied already.
                    let app = AppleSettings.App(bundleId: Self.bundleId, appAppleId: 1234, environments: ["Production"])
                    for sent in apple.sent.prefix(2) {
                        let delivery = try await apple.chain.source(apps: [app]).handle(AppleBodies.request(sent.signed))
                        try await harness.publish(try #require(delivery.events.first))
                    }
                    try await waitUntil("the received two processed") {
                        for sent in apple.sent.prefix(2) where try await !store.hasProcessed(eventId: Self.eventId(sent.uuid)) { return false }
                        return true
                    }

                    let recorded = RecordingMetrics()
                    let backfill = Self.backfill(apple, store: store, producer: harness.producer, topic: harness.topics.events,
                                                 metrics: MerchantMetrics(factory: recorded))
                    let before = Timestamp.now.millisecondsSince1970
                    let first = try await backfill.run(.init())
                    #expect(first.count == 1)
                    #expect(first.first?.failure == nil)
                    #expect(first.first?.pages == 3)
                    #expect(first.first?.items == 7)
                    #expect(first.first?.new == 5)
                    #expect(first.first?.known == 2)
                    #expect(first.first?.rejected == 0)
                    #expect(apple.fake.jwtProblems.isEmpty)
                    #expect(apple.fake.requests.map(\.target) == (1...3).map { Apple.target(page: $0) })
                    #expect(apple.fake.requests.map(\.method) == ["POST", "POST", "POST"])
                    // The same window on every page; the first run reads firstRunDays back.
                    let windows = apple.windows
                    #expect(Set(windows.map(\.start)).count == 1 && Set(windows.map(\.end)).count == 1)
                    #expect(abs((windows.first?.start ?? 0) - (before - 7 * Self.day)) < 60_000)
                    #expect(recorded.total("tollgate_reconcile_pages_total", ["job": "apple"]) == 3)
                    #expect(recorded.total("tollgate_reconcile_items_total", ["job": "apple", "outcome": "new"]) == 5)
                    #expect(recorded.total("tollgate_reconcile_items_total", ["job": "apple", "outcome": "known"]) == 2)
                    #expect(recorded.total("tollgate_reconcile_runs_total", ["job": "apple", "outcome": "ok"]) == 1)

                    try await Self.waitApplied(store, apple)
                    // Each one applied exactly once, and the two known were not published again: seven records in
                    // all. (A consumer's redelivery after a rebalance may still count a duplicate: that is Kafka's.)
                    #expect(workers.metrics.total("tollgate_worker_events_total", ["outcome": "applied"]) == 7)
                    let records = try await harness.records(harness.topics.events)
                    #expect(records.count == 7)
                    #expect(Set(records.compactMap { $0.headers.string("ce_id") }) == Set(apple.sent.map { Self.eventId($0.uuid) }))
                    // The same CloudEvents headers the gateway writes.
                    #expect(records.allSatisfy { $0.headers.string("ce_specversion") == "1.0" && $0.headers.string("ce_type") != nil })
                    for sent in apple.sent {
                        let entitlements = try await store.entitlements(app: Self.bundleId, user: sent.user, environment: "production")
                        #expect(entitlements?.map(\.product) == ["pro.monthly"], "\(sent.user)")
                    }

                    // The checkpoint moved to the end of the window.
                    let checkpoint = try await store.reconcileCheckpoint(job: "apple", scope: "\(Self.bundleId)/Production")
                    #expect(checkpoint?.window == nil)
                    #expect(checkpoint?.doneThroughMs == windows.first?.end)

                    // A second run reads from the checkpoint (less the overlap) and publishes nothing.
                    let second = try await backfill.run(.init())
                    #expect(second.first?.new == 0)
                    #expect(second.first?.known == 7)
                    let secondStart = apple.windows.last?.start
                    #expect(secondStart == (windows.first?.end).map { $0 - AppleNotificationBackfill.overlapMs })
                    #expect(try await harness.records(harness.topics.events).count == 7)
                    let later = try await store.reconcileCheckpoint(job: "apple", scope: "\(Self.bundleId)/Production")
                    #expect((later?.doneThroughMs ?? 0) >= (checkpoint?.doneThroughMs ?? .max))
                }
            }
        }
    }

    @Test("a malformed page stops the run at the page before it; the next run resumes from its token and applies the rest once",
          arguments: Backend.allCases)
    func malformedPageThenResume(backend: Backend) async throws {
        let apple = try Self.apple(count: 7)
        defer { apple.stop() }
        apple.storeHistory(pageSize: 3)
        apple.fake.script(Apple.target(page: 2), .json(200, #"{"hasMore":"yes","notificationHistory":{"signedPayload":1}}"#))
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store) { workers async throws in
                    let backfill = Self.backfill(apple, store: store, producer: harness.producer, topic: harness.topics.events)
                    let interrupted = try await backfill.run(.init())
                    #expect(interrupted.first?.pages == 1)
                    #expect(interrupted.first?.new == 3)
                    #expect(interrupted.first?.failure?.contains("decode") == true, "\(interrupted.first?.failure ?? "")")
                    let checkpoint = try await store.reconcileCheckpoint(job: "apple", scope: "\(Self.bundleId)/Production")
                    #expect(checkpoint?.doneThroughMs == nil)
                    #expect(checkpoint?.window?.pageToken == "page-2")

                    let resumed = try await backfill.run(.init())
                    #expect(resumed.first?.failure == nil)
                    #expect(resumed.first?.pages == 2)
                    #expect(resumed.first?.new == 4)
                    // The resumed run asked for page 2 first, with the first run's window.
                    #expect(apple.fake.requests.map(\.target) == [1, 2, 2, 3].map { Apple.target(page: $0) })
                    #expect(Set(apple.windows.map(\.start)).count == 1)

                    try await Self.waitApplied(store, apple)
                    #expect(workers.metrics.total("tollgate_worker_events_total", ["outcome": "applied"]) == 7)
                    #expect(try await harness.records(harness.topics.events).count == 7)
                    let done = try await store.reconcileCheckpoint(job: "apple", scope: "\(Self.bundleId)/Production")
                    #expect(done?.window == nil && done?.doneThroughMs == checkpoint?.window?.endMs)
                }
            }
        }
    }

    @Test("a pagination token Apple no longer takes: the next run reads the window again from its start")
    func expiredPaginationToken() async throws {
        let apple = try Self.apple(count: 4)
        defer { apple.stop() }
        apple.storeHistory(pageSize: 2)
        apple.fake.script(Apple.target(page: 2), .json(400, #"{"errorCode":4000017,"errorMessage":"Pagination token expired."}"#))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let backfill = Self.backfill(apple, store: store, producer: harness.producer, topic: harness.topics.events)
                let first = try await backfill.run(.init())
                #expect(first.first?.failure?.contains("errorCode 4000017") == true, "\(first.first?.failure ?? "")")
                let checkpoint = try await store.reconcileCheckpoint(job: "apple", scope: "\(Self.bundleId)/Production")
                #expect(checkpoint?.window != nil && checkpoint?.window?.pageToken == nil)
                let second = try await backfill.run(.init())
                #expect(second.first?.failure == nil)
                #expect(second.first?.pages == 2)
                #expect(apple.fake.requests.map(\.target) == [1, 2, 1, 2].map { Apple.target(page: $0) })
                #expect(Set(apple.windows.map(\.start)).count == 1)
            }
        }
    }

    @Test("a 429 waits Retry-After and asks for the same page again")
    func rateLimited() async throws {
        let apple = try Self.apple(count: 4)
        defer { apple.stop() }
        apple.storeHistory(pageSize: 2)
        apple.fake.script(Apple.target(page: 2), .init(status: 429, headers: [("Retry-After", "7")], body: []))
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let slept = Sleeps()
                let backfill = Self.backfill(apple, store: store, producer: harness.producer, topic: harness.topics.events, slept: slept)
                let result = try await backfill.run(.init())
                #expect(result.first?.failure == nil)
                #expect(result.first?.rateLimitWaits == 1)
                #expect(result.first?.new == 4)
                #expect(slept.values.withLock { $0 } == [.seconds(7)])
                #expect(apple.fake.requests.map(\.target) == [1, 2, 2].map { Apple.target(page: $0) })
                #expect(try await harness.records(harness.topics.events, atLeast: 4).count == 4)
            }
        }
    }

    @Test("credentials Apple refuses (401): a permanent error of its own (key_refused); the scope stops with what to check, nothing is published, the checkpoint stays")
    func expiredCredentials() async throws {
        let apple = try Self.apple(count: 2, clientKey: PrivateKey.generateP256())
        defer { apple.stop() }
        apple.storeHistory(pageSize: 2)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let recorded = RecordingMetrics()
                let backfill = Self.backfill(apple, store: store, producer: harness.producer, topic: harness.topics.events,
                                             metrics: MerchantMetrics(factory: recorded))
                let result = try await backfill.run(.init())
                let failure = try #require(result.first?.failure)
                #expect(failure.contains("http_401, permanent"), "\(failure)")
                #expect(failure.contains("check its issuer id, key id and .p8"))
                #expect(!failure.contains("BEGIN") && !failure.contains("Bearer"))
                #expect(result.first?.pages == 0)
                // The client's one retry with a new token, then the refusal.
                #expect(apple.fake.requests.count == 2)
                #expect(recorded.total("tollgate_reconcile_runs_total", ["job": "apple", "outcome": "key_refused"]) == 1)
                #expect(recorded.total("tollgate_reconcile_runs_total", ["job": "apple", "outcome": "failed"]) == 0)
                #expect(try await store.reconcileCheckpoint(job: "apple", scope: "\(Self.bundleId)/Production") == nil)
                #expect(try await harness.records(harness.topics.events).isEmpty)
            }
        }
    }

    @Test("Apple's limits: at most 180 days back in production and 30 in sandbox; a dry run publishes nothing and keeps no checkpoint")
    func limitsAndDryRun() async throws {
        let apple = try Self.apple(count: 2)
        defer { apple.stop() }
        apple.storeHistory(pageSize: 5)
        apple.storeHistory(pageSize: 5, environment: "sandbox")
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let backfill = Self.backfill(apple, store: store, producer: harness.producer, topic: harness.topics.events,
                                             environments: ["Production", "Sandbox"])
                let now = Timestamp.now.millisecondsSince1970
                let result = try await backfill.run(.init(sinceMs: now - 400 * Self.day, onlyFailures: true, dryRun: true))
                #expect(result.map(\.scope) == ["\(Self.bundleId)/Production", "\(Self.bundleId)/Sandbox"])
                #expect(result.map(\.new) == [2, 0])
                // The sandbox history here holds Production notifications: not Apple's answer, so not published.
                #expect(result.last?.rejected == 2)
                let windows = apple.windows
                #expect(windows.count == 2)
                let production = try #require(windows.first), sandbox = try #require(windows.last)
                #expect(production.start >= now - 180 * Self.day && production.start < now - 179 * Self.day)
                #expect(sandbox.start >= now - 30 * Self.day && sandbox.start < now - 29 * Self.day)
                #expect(windows.allSatisfy { $0.onlyFailures == true })
                #expect(try await harness.records(harness.topics.events).isEmpty)
                #expect(try await store.reconcileCheckpoint(job: "apple", scope: "\(Self.bundleId)/Production") == nil)
            }
        }
    }

    @Test("the first run after start waits until an interval after the job last moved a checkpoint: the whole interval without one, none when that is past, none with --reconcile-now")
    func firstRunTiming() async throws {
        let apple = try Self.apple(count: 1)
        defer { apple.stop() }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let backfill = Self.backfill(apple, store: store, producer: harness.producer, topic: harness.topics.events)
                let now = Timestamp.now.millisecondsSince1970
                var job = ReconcileJob.apple(backfill, interval: .seconds(3600), logger: harness.logger)
                job.now = { now }
                #expect(await job.firstRunDelay() == .seconds(3600))
                // Another job's checkpoints are not this one's.
                try await store.saveReconcileCheckpoint(.init(doneThroughMs: now, window: nil), job: "google", scope: "com.example.app",
                                                        nowMs: now - 7_200_000)
                #expect(await job.firstRunDelay() == .seconds(3600))
                try await store.saveReconcileCheckpoint(.init(doneThroughMs: now - 600_000, window: nil), job: "apple",
                                                        scope: "\(Self.bundleId)/Production", nowMs: now - 600_000)
                #expect(await job.firstRunDelay() == .seconds(3000))
                // A scope that has not moved for long (an app no longer configured) does not make every start run at once.
                try await store.saveReconcileCheckpoint(.init(doneThroughMs: now - 7_200_000, window: nil), job: "apple",
                                                        scope: "com.example.removed/Production", nowMs: now - 7_200_000)
                #expect(await job.firstRunDelay() == .seconds(3000))
                // Down longer than the interval: at once.
                try await store.saveReconcileCheckpoint(.init(doneThroughMs: now - 5_400_000, window: nil), job: "apple",
                                                        scope: "\(Self.bundleId)/Production", nowMs: now - 5_400_000)
                #expect(await job.firstRunDelay() == .zero)
                let eager = ReconcileJob.apple(backfill, interval: .seconds(3600), startsNow: true, logger: harness.logger)
                #expect(await eager.firstRunDelay() == .zero)
                #expect(apple.fake.requests.isEmpty)
            }
        }
    }

    @Test("one replica at a time: the job runs only while it holds the reconcile-apple lease")
    func oneReplicaAtATime() async throws {
        let apple = try Self.apple(count: 1)
        defer { apple.stop() }
        apple.storeHistory(pageSize: 5)
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let backfill = Self.backfill(apple, store: store, producer: harness.producer, topic: harness.topics.events)
                let now = Timestamp.now.millisecondsSince1970
                #expect(try await store.acquireLease(ReconcileJob.leaseName("apple"), holder: "other replica", ttlMs: 60_000, nowMs: now))
                let job = ReconcileJob.apple(backfill, interval: .seconds(3600), logger: harness.logger)
                #expect(await job.runOnce() == false)
                #expect(apple.fake.requests.isEmpty)
                // The other replica's lease ran out: this one takes it and runs.
                #expect(try await store.acquireLease(ReconcileJob.leaseName("apple"), holder: "other replica", ttlMs: -1, nowMs: now))
                #expect(await job.runOnce() == true)
                #expect(apple.fake.requests.count == 1)
            }
        }
    }
}
