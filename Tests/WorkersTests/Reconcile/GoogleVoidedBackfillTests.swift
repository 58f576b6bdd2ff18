import Entitlements
import Events
import Foundation
import Logging
import StoreTestSupport
import Synchronization
import Testing
@testable import Merchant
@testable import ProviderAPIs
@testable import Workers

/// Google voids purchases (a refund made in the Play Console sends no
/// notification); the backfill reads `purchases.voidedpurchases.list` from a local Google answering as
/// its reference shows, publishes each void, and the projection, confirming each against the API,
/// ends each purchase exactly once.
@Suite("Google voided purchases backfill")
struct GoogleVoidedBackfillTests {
    static let day: Int64 = 86_400_000

    static func subscription(state: String, user: String, expiresMs: Int64) -> String {
        let expires = Timestamp(millisecondsSince1970: expiresMs).rfc3339
        return #"{"kind":"androidpublisher#subscriptionPurchaseV2","lineItems":[{"productId":"premium_monthly","expiryTime":"\#(expires)","autoRenewingPlan":{"autoRenewEnabled":true}}],"startTime":"2026-01-01T00:00:00Z","subscriptionState":"\#(state)","latestOrderId":"GPA.3345-0001","externalAccountIdentifiers":{"obfuscatedExternalAccountId":"\#(user)"}}"#
    }

    static func backfill(_ h: PlayHarness, store: EntitlementStore, harness: WorkerHarness, metrics: MerchantMetrics = MerchantMetrics(factory: RecordingMetrics()),
                         sleeps: AppleBackfillTests.Sleeps = .init(),
                         now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) -> GoogleVoidedPurchasesBackfill {
        GoogleVoidedPurchasesBackfill(client: h.client, packages: [PlayHarness.package], store: store,
                                      publisher: KafkaEventPublisher(producer: harness.producer, topic: harness.topics.events), metrics: metrics, logger: harness.logger, now: now,
                                      sleep: { duration in sleeps.values.withLock { $0.append(duration) } })
    }

    static func voidId(_ token: String, _ atMs: Int64) -> String { "google:voidedpurchases:\(PlayHarness.package):\(token):\(atMs)" }

    @Test("each void is applied once: subscriptions revoked, one-time purchases refunded; a second run changes nothing", arguments: Backend.allCases)
    func appliesEachOnce(backend: Backend) async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let now = Timestamp.now.millisecondsSince1970
        h.fake.setVoidedPageSize(2)
        try await TestDatabases.withStore(backend) { store async throws in
            try await WorkerHarness.with { harness async throws in
                try await harness.withWorkers(store: store, playAPI: GooglePlayEnricher(client: h.client)) { workers async throws in
                    // Three subscriptions the workers know as active.
                    let subscriptions = (1...3).map { "sub-token-\($0)" }
                    for (index, token) in subscriptions.enumerated() {
                        h.fake.store(Self.subscription(state: "SUBSCRIPTION_STATE_ACTIVE", user: "user-\(index)", expiresMs: now + 20 * Self.day),
                                     at: PlayHarness.subscriptionPath(token))
                        try await harness.publish(GoogleForgedClaimsTests.event("bought-\(index)", .subscriptionStarted, token: token,
                                                                                 occurredAt: Timestamp(millisecondsSince1970: now - 5 * Self.day).rfc3339))
                    }
                    try await waitUntil("the subscriptions active") {
                        for index in 0..<3 where try await store.entitlements(app: PlayHarness.package, user: "user-\(index)")?.first?.state != .active {
                            return false
                        }
                        return true
                    }
                    // Google voids the three and two one-time purchases, and revokes the subscriptions; no notification comes.
                    for (index, token) in subscriptions.enumerated() {
                        h.fake.store(Self.subscription(state: "SUBSCRIPTION_STATE_EXPIRED", user: "user-\(index)", expiresMs: now - 60_000),
                                     at: PlayHarness.subscriptionPath(token))
                    }
                    let voids = subscriptions.enumerated().map { ($1, now - 3_600_000 + Int64($0)) } + [("one-time-1", now - 7_200_000), ("one-time-2", now - 600_000)]
                    h.fake.storeVoided(voids.map { GoogleForgedClaimsTests.voided($0.0, atMs: $0.1) })

                    let recorded = RecordingMetrics()
                    let backfill = Self.backfill(h, store: store, harness: harness, metrics: MerchantMetrics(factory: recorded))
                    let first = try await backfill.run(.init())
                    #expect(first.first?.failure == nil)
                    #expect(first.first?.pages == 3)
                    #expect(first.first?.items == 5)
                    #expect(first.first?.new == 5)
                    // The projection asks the same list to confirm each void it applies (from a day before the
                    // void): the backfill's own pages are those from its start.
                    let listed = h.fake.apiTargets.filter { $0.contains("/purchases/voidedpurchases?") }
                    let start = listed.first.flatMap { $0.split(separator: "startTime=").last?.prefix(while: \.isNumber) }.flatMap { Int64($0) }
                    let asked = listed.filter { $0.contains("startTime=\(start ?? -1)&") }
                    #expect(asked.count == 3)
                    // Google keeps 30 days: the first run starts there.
                    #expect((start ?? 0) >= now - 30 * Self.day && (start ?? 0) < now - 29 * Self.day)
                    #expect(recorded.total("tollgate_reconcile_pages_total", ["job": "google"]) == 3)

                    try await waitUntil("every void processed") {
                        for void in voids where try await !store.hasProcessed(eventId: Self.voidId(void.0, void.1)) { return false }
                        return true
                    }
                    let records = try await harness.records(harness.topics.events)
                    let types = Dictionary(records.compactMap { r in r.headers.string("ce_id").map { ($0, r.headers.string("ce_type") ?? "") } },
                                           uniquingKeysWith: { a, _ in a })
                    for token in subscriptions {
                        #expect(types.first { $0.key.contains(":\(token):") }?.value == "dev.tollgate.subscription.revoked", "\(token)")
                        let purchase = try await store.purchase(PurchaseKey(source: "google", app: PlayHarness.package, environment: "production", subject: token))
                        #expect(purchase?.state == .revoked)
                    }
                    for token in ["one-time-1", "one-time-2"] {
                        #expect(types.first { $0.key.contains(":\(token):") }?.value == "dev.tollgate.purchase.refunded", "\(token)")
                        let purchase = try await store.purchase(PurchaseKey(source: "google", app: PlayHarness.package, environment: "production", subject: token))
                        #expect(purchase?.state == .refunded)
                    }
                    for index in 0..<3 {
                        #expect(try await store.entitlements(app: PlayHarness.package, user: "user-\(index)")?.first?.state == .revoked)
                    }
                    // Three purchases, then five voids: each applied once.
                    #expect(workers.metrics.events("applied") == 8)
                    #expect(workers.metrics.events("duplicate") == 0)
                    let checkpoint = try await store.reconcileCheckpoint(job: "google", scope: PlayHarness.package)
                    #expect(checkpoint?.window == nil && checkpoint?.doneThroughMs != nil)

                    // The next run starts at the checkpoint (less the overlap): these voids are before it.
                    let second = try await backfill.run(.init())
                    #expect(second.first?.failure == nil)
                    #expect(second.first?.new == 0)
                    // Read again from further back, each is known.
                    let again = try await backfill.run(.init(sinceMs: now - Self.day))
                    #expect(again.first?.new == 0)
                    #expect(again.first?.known == 5)
                    #expect(try await harness.records(harness.topics.events).count == records.count)
                }
            }
        }
    }

    @Test("an interrupted run (a malformed page) resumes from its page token; a 429 waits a minute; a refused service account stops with what to check")
    func resumeRateLimitAndRefusal() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        let now = Timestamp.now.millisecondsSince1970
        h.fake.setVoidedPageSize(2)
        h.fake.storeVoided((1...4).map { GoogleForgedClaimsTests.voided("p-\($0)", atMs: now - 3_600_000 + Int64($0)) })
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let sleeps = AppleBackfillTests.Sleeps()
                // One instant for every run, so each run asks the same first page.
                let backfill = Self.backfill(h, store: store, harness: harness, sleeps: sleeps, now: { now })
                let path = "/androidpublisher/v3/applications/\(PlayHarness.package)/purchases/voidedpurchases"
                let firstTarget = try #require(await Self.firstTarget(h, backfill, path: path))
                // The second page is malformed once.
                let secondTarget = firstTarget + "&token=page-2"
                h.fake.script(secondTarget, .reply(.json(200, #"{"voidedPurchases": "none"}"#)))
                let interrupted = try await backfill.run(.init())
                #expect(interrupted.first?.failure?.contains("decode") == true, "\(interrupted.first?.failure ?? "")")
                #expect(interrupted.first?.new == 2)
                #expect(try await store.reconcileCheckpoint(job: "google", scope: PlayHarness.package)?.window?.pageToken == "page-2")

                h.fake.script(secondTarget, .reply(.json(429, #"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}"#)))
                let resumed = try await backfill.run(.init())
                #expect(resumed.first?.failure == nil)
                #expect(resumed.first?.pages == 1)
                #expect(resumed.first?.new == 2)
                #expect(resumed.first?.rateLimitWaits == 1)
                #expect(sleeps.values.withLock { $0 } == [.seconds(60)])
                #expect(Set(try await harness.records(harness.topics.events, atLeast: 4).compactMap { $0.headers.string("ce_id") }).count == 4)

                h.fake.script(path + "?startTime=\(now - Self.day)&type=1&includeQuantityBasedPartialRefund=true&maxResults=1000",
                              .reply(.json(403, #"{"error": {"code": 403, "message": "The current user has insufficient permissions to perform the requested operation.", "status": "PERMISSION_DENIED"}}"#)))
                let refusedRun = try await backfill.run(.init(sinceMs: now - Self.day, dryRun: true))
                let failure = try #require(refusedRun.first?.failure)
                #expect(failure.contains("http_403"), "\(failure)")
                #expect(failure.contains("check sources.google.playApi.credentialsFile"))
            }
        }
    }

    @Test("one replica at a time: the Google job runs only while it holds the reconcile-google lease, which the Apple job's does not stand for")
    func oneReplicaAtATime() async throws {
        let h = try await PlayHarness.start()
        defer { h.stop() }
        try await TestDatabases.withStore(.sqlite) { store async throws in
            try await WorkerHarness.with { harness async throws in
                let job = ReconcileJob.google(Self.backfill(h, store: store, harness: harness), interval: .seconds(3600), logger: harness.logger)
                let now = Timestamp.now.millisecondsSince1970
                // Another replica holds this job's lease: nothing is asked of Google.
                #expect(try await store.acquireLease(ReconcileJob.leaseName("google"), holder: "other replica", ttlMs: 60_000, nowMs: now))
                #expect(await job.runOnce() == false)
                #expect(!h.fake.apiTargets.contains { $0.contains("/voidedpurchases") }, "\(h.fake.apiTargets)")
                // The Apple job's lease is another lease; once the other replica's runs out, this one runs.
                #expect(try await store.acquireLease(ReconcileJob.leaseName("apple"), holder: "other replica", ttlMs: 60_000, nowMs: now))
                #expect(try await store.acquireLease(ReconcileJob.leaseName("google"), holder: "other replica", ttlMs: -1, nowMs: now))
                #expect(await job.runOnce() == true)
                #expect(h.fake.apiTargets.filter { $0.contains("/voidedpurchases") }.count == 1, "\(h.fake.apiTargets)")
            }
        }
    }

    /// The target of the first page a run from the checkpoint asks for (a dry run: it moves nothing).
    static func firstTarget(_ h: PlayHarness, _ backfill: GoogleVoidedPurchasesBackfill, path: String) async throws -> String? {
        _ = try await backfill.run(.init(dryRun: true))
        return h.fake.apiTargets.first { $0.hasPrefix(path + "?") }
    }
}
