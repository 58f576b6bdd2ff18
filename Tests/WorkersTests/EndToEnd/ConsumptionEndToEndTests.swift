import Entitlements
import Events
import Foundation
import Logging
import Outbound
import Store
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import Toolkit
import Verifiers
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Apple's consumption requests answered by the running workers, against a local App Store Server
/// API that checks the JWT and the body as Apple documents Send Consumption Information.
@Suite("End to end: consumption requests answered")
struct ConsumptionEndToEndTests {
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"
    static let bundleId = "com.example"
    static let hour: Int64 = 3_600_000
    static let target = "/production/inApps/v2/transactions/consumption/2000000111"

    /// What the local Apple saw: every attempt at the endpoint, and the bodies it accepted.
    final class Answers: Sendable {
        let accepted = Mutex<[JSONValue]>([])
        let attempts = Atomic<Int>(0)
    }

    /// The local Apple and the apps the workers answer for.
    struct AppleSide: Sendable {
        let fake: FakeAppStoreAPI
        let answering: ConsumptionAnswering
        let answers = Answers()

        /// The first `failingFirst` PUTs are answered `failingWith` (500: Apple's error; 401: the key refused).
        init(policy: AppleSettings.App.ConsumptionPolicy, failingFirst: Int = 0, failingWith status: Int = 500) throws {
            let key = try #require(PrivateKey.generateP256())
            fake = FakeAppStoreAPI(publicKey: try #require(key.publicKey), issuerId: ConsumptionEndToEndTests.issuerId,
                                   keyId: ConsumptionEndToEndTests.keyId, bundleId: ConsumptionEndToEndTests.bundleId)
            let credentials = try AppStoreAPICredentials(issuerId: ConsumptionEndToEndTests.issuerId, keyId: ConsumptionEndToEndTests.keyId,
                                                         bundleId: ConsumptionEndToEndTests.bundleId, privateKey: key)
            var logger = Logger(label: "consumption-test")
            logger.logLevel = .critical
            let client = AppStoreAPIClient(credentials: credentials, baseURLs: .init(production: fake.productionURL, sandbox: fake.sandboxURL),
                                           fetcher: HTTPClientFetcher(), timeout: .seconds(5), logger: logger)
            var app = AppleSettings.App(bundleId: ConsumptionEndToEndTests.bundleId, appAppleId: 1234, environments: ["Production"])
            app.consumption = policy
            var settings = AppleSettings()
            settings.apps = [app]
            var answering = ConsumptionAnswering(settings: settings, clients: [ConsumptionEndToEndTests.bundleId: client])
            // The job looks often and tries a failed answer again soon, so the tests wait little.
            answering.interval = .milliseconds(50)
            answering.firstRetryMs = 200
            self.answering = answering
            let recorded = self.answers
            fake.handle(ConsumptionEndToEndTests.target) { request in
                let attempt = recorded.attempts.add(1, ordering: .sequentiallyConsistent).newValue
                guard request.method == "PUT" else { return .json(405, #"{"errorCode":4000000,"errorMessage":"method"}"#) }
                if attempt <= failingFirst {
                    return status == 401 ? LoopbackHTTPServer.Reply(status: 401, body: [])
                                         : .json(status, #"{"errorCode":5000000,"errorMessage":"An unknown error occurred."}"#)
                }
                guard let body = JSONValue.parse(request.body) else {
                    return .json(400, #"{"errorCode":4000000,"errorMessage":"Invalid request."}"#)
                }
                if let problem = AppleSide.problem(in: body) { return .json(400, problem) }
                recorded.accepted.withLock { $0.append(body) }
                return LoopbackHTTPServer.Reply(status: 202, body: [])
            }
        }

        /// What Apple refuses in a ConsumptionRequest body, as its error body; nil when it is acceptable.
        static func problem(in body: JSONValue) -> String? {
            guard let fields = body.object else { return #"{"errorCode":4000000,"errorMessage":"Invalid request."}"# }
            let known: Set = ["customerConsented", "deliveryStatus", "sampleContentProvided", "consumptionPercentage", "refundPreference"]
            guard Set(fields.keys).isSubset(of: known) else { return #"{"errorCode":4000000,"errorMessage":"Invalid request."}"# }
            guard fields["customerConsented"]?.bool == true else {
                return #"{"errorCode":4000043,"errorMessage":"Invalid request. The customer consented field is invalid."}"#
            }
            let statuses: Set = ["DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER"]
            guard let status = fields["deliveryStatus"]?.string, statuses.contains(status) else {
                return #"{"errorCode":4000049,"errorMessage":"Invalid request. The delivery status field is invalid."}"#
            }
            guard fields["sampleContentProvided"]?.bool != nil else {
                return #"{"errorCode":4000044,"errorMessage":"Invalid request. The sample content provided field is invalid."}"#
            }
            if let percentage = fields["consumptionPercentage"] {
                guard let value = percentage.int64, (0...100_000).contains(value), status == "DELIVERED" || value == 0 else {
                    return #"{"errorCode":4000000,"errorMessage":"Invalid request. The consumption percentage field is invalid."}"#
                }
            }
            if let preference = fields["refundPreference"] {
                guard let value = preference.string, ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"].contains(value) else {
                    return #"{"errorCode":4000000,"errorMessage":"Invalid request. The refund preference field is invalid."}"#
                }
            }
            return nil
        }
    }

    static var policy: AppleSettings.App.ConsumptionPolicy {
        var policy = AppleSettings.App.ConsumptionPolicy()
        policy.enabled = true
        policy.customerConsented = true
        policy.sampleContentProvided = true
        policy.refundPreference = .decline
        return policy
    }

    /// A monthly subscription bought `startMs`, ending `endMs`, as the store has it.
    static func started(startMs: Int64, endMs: Int64) -> NormalizedEvent {
        var event = ProjectionTests.event("started-1", .subscriptionStarted, at: startMs, expiresMs: endMs)
        event.transaction?.purchasedAt = Timestamp(millisecondsSince1970: startMs).rfc3339
        return event
    }

    /// Apple's CONSUMPTION_REQUEST as the Apple normalizer writes it: the transaction's ids and period, the reason.
    static func consumptionRequest(_ id: String, at requestedMs: Int64, startMs: Int64, endMs: Int64) -> NormalizedEvent {
        NormalizedEvent(
            id: "apple:\(id)", type: .purchaseConsumptionRequested, source: "/apple/\(bundleId)", environment: .production,
            app: bundleId, subject: "otx-1", occurredAt: Timestamp(millisecondsSince1970: requestedMs).rfc3339,
            receivedAt: Timestamp(millisecondsSince1970: requestedMs + 1_000).rfc3339, user: "u-1", product: "pro.monthly",
            transaction: NormalizedEvent.Transaction(id: "2000000111", originalId: "otx-1",
                                                     purchasedAt: Timestamp(millisecondsSince1970: startMs).rfc3339,
                                                     expiresAt: Timestamp(millisecondsSince1970: endMs).rfc3339),
            reason: "unintended_purchase", sourceType: "CONSUMPTION_REQUEST")
    }

    /// Runs `body` with running workers answering for `apple`, the subscription already in the store.
    static func run(_ apple: AppleSide, retryDelaysMs: [Int] = [300, 600], startMs: Int64, endMs: Int64,
                    _ body: @escaping (WorkerHarness, RunningWorkers, EntitlementStore) async throws -> Void) async throws {
        defer { apple.fake.stop() }
        try await TestDatabases.withURL(.sqlite) { url in
            try await withStore(url: url) { store in
                _ = try await ProjectionTests.apply(store, started(startMs: startMs, endMs: endMs))
                try await WorkerHarness.with(retryDelaysMs: retryDelaysMs) { harness in
                    try await harness.withWorkers(store: store, consumption: apple.answering) { workers in
                        try await body(harness, workers, store)
                    }
                }
            }
        }
    }

    @Test("a consumption request leads to one PUT with the policy's consent, sample and preference and the store's delivery and consumption")
    func answered() async throws {
        let apple = try AppleSide(policy: Self.policy)
        let now = Timestamp.now.millisecondsSince1970 / 1_000 * 1_000
        let startMs = now - 10 * 24 * Self.hour, endMs = now + 20 * 24 * Self.hour, requestedMs = now - Self.hour
        try await Self.run(apple, startMs: startMs, endMs: endMs) { harness, workers, store in
            let event = Self.consumptionRequest("c-1", at: requestedMs, startMs: startMs, endMs: endMs)
            try await harness.publish(event)
            try await waitUntil("the request applied") { try await store.hasProcessed(eventId: event.id) }
            try await waitUntil("the answer sent") { workers.metrics.total("tollgate_worker_consumption_answers_total", ["outcome": "sent"]) == 1 }
            #expect(try await Self.queued(store) == 0)
        }
        let bodies = apple.answers.accepted.withLock { $0 }
        #expect(bodies.count == 1)
        let body = try #require(bodies.first?.object)
        #expect(Set(body.keys) == ["customerConsented", "deliveryStatus", "sampleContentProvided", "consumptionPercentage", "refundPreference"])
        // The policy's word.
        #expect(body["customerConsented"]?.bool == true)
        #expect(body["sampleContentProvided"]?.bool == true)
        #expect(body["refundPreference"]?.string == "DECLINE")
        // The store's: the subscription was granted to u-1, and 10 days less an hour of its 30 had passed
        // when the customer asked, in milliunits of a percent.
        #expect(body["deliveryStatus"]?.string == "DELIVERED")
        #expect(body["consumptionPercentage"]?.int64 == (requestedMs - startMs) * 100_000 / (endMs - startMs))
        #expect(body["consumptionPercentage"]?.int64 == 33_194)
        #expect(apple.fake.jwtProblems.isEmpty)
        #expect(apple.fake.requests.map(\.method) == ["PUT"])
    }

    @Test("a disabled policy sends nothing; the request is still applied and counted as skipped_disabled")
    func disabled() async throws {
        var policy = Self.policy
        policy.enabled = false
        let apple = try AppleSide(policy: policy)
        let now = Timestamp.now.millisecondsSince1970
        let startMs = now - 10 * 24 * Self.hour, endMs = now + 20 * 24 * Self.hour
        try await Self.run(apple, startMs: startMs, endMs: endMs) { harness, workers, store in
            let event = Self.consumptionRequest("c-2", at: now - Self.hour, startMs: startMs, endMs: endMs)
            try await harness.publish(event)
            try await waitUntil("the request applied") { try await store.hasProcessed(eventId: event.id) }
            #expect(workers.metrics.total("tollgate_worker_consumption_answers_total", ["outcome": "skipped_disabled"]) == 1)
        }
        #expect(apple.fake.requests.isEmpty)
    }

    /// A 401 is the key refused after the client's own retry with a new JWT (two PUTs): permanent until
    /// the key is fixed, but within Apple's 12 hours the answer still waits for it.
    @Test("Apple answering 500, or refusing the key (401): the event applies at once, the answer stays queued and is tried again, and a later PUT is accepted",
          arguments: [(500, 1), (401, 2)])
    func retriedAfterServerError(_ status: Int, _ failing: Int) async throws {
        let apple = try AppleSide(policy: Self.policy, failingFirst: failing, failingWith: status)
        let now = Timestamp.now.millisecondsSince1970
        let startMs = now - 10 * 24 * Self.hour, endMs = now + 20 * 24 * Self.hour
        try await Self.run(apple, startMs: startMs, endMs: endMs) { harness, workers, store in
            let event = Self.consumptionRequest("c-3", at: now - Self.hour, startMs: startMs, endMs: endMs)
            try await harness.publish(event)
            try await waitUntil("the request applied") { try await store.hasProcessed(eventId: event.id) }
            try await waitUntil("the answer sent on a later attempt") {
                workers.metrics.total("tollgate_worker_consumption_answers_total", ["outcome": "sent"]) == 1
            }
            #expect(workers.metrics.total("tollgate_worker_consumption_answers_total", ["outcome": "failed"]) == 0)
            // Apple's failure is the answer's, not the event's: no retry tier, nothing dead-lettered, nothing left queued.
            #expect(workers.metrics.total("tollgate_worker_retries_total", ["topic": harness.topics.retry(delayMs: 300)]) == 0)
            #expect(try await harness.records(harness.topics.deadLetter).isEmpty)
            #expect(try await Self.queued(store) == 0)
            // The gauge showed it waiting between the two attempts, and nothing once it was sent.
            try await waitUntil("nothing waiting") { workers.metrics.gauge("tollgate_worker_consumption_answers_waiting")?.last == 0 }
            #expect(workers.metrics.gauge("tollgate_worker_consumption_answers_waiting")?.highest == 1)
            #expect(workers.metrics.gauge("tollgate_worker_consumption_answer_oldest_age_seconds")?.highest ?? 0 >= 3_600)
        }
        #expect(apple.answers.attempts.load(ordering: .sequentiallyConsistent) == failing + 1)
        #expect(apple.answers.accepted.withLock { $0.count } == 1)
        #expect(apple.fake.jwtProblems.isEmpty)
    }

    /// The requests waiting in `consumption_answers`.
    static func queued(_ store: EntitlementStore) async throws -> Int64 {
        try await store.database.read { connection throws(StoreError) in
            try connection.query("SELECT COUNT(*) AS n FROM consumption_answers", []).first?.int("n") ?? -1
        }
    }

    @Test("a request older than Apple's 12 hours is dropped and counted as expired; nothing is sent")
    func pastTheWindow() async throws {
        let apple = try AppleSide(policy: Self.policy)
        let now = Timestamp.now.millisecondsSince1970
        let startMs = now - 10 * 24 * Self.hour, endMs = now + 20 * 24 * Self.hour
        try await Self.run(apple, startMs: startMs, endMs: endMs) { harness, workers, store in
            let event = Self.consumptionRequest("c-4", at: now - 13 * Self.hour, startMs: startMs, endMs: endMs)
            try await harness.publish(event)
            try await waitUntil("the request applied") { try await store.hasProcessed(eventId: event.id) }
            #expect(workers.metrics.total("tollgate_worker_consumption_answers_total", ["outcome": "expired"]) == 1)
        }
        #expect(apple.fake.requests.isEmpty)
    }
}
