import Events
import Foundation
import Kafka
import Testing

extension DevEndToEndTests {
    /// `tollgate replay --from raw.<source>`: the raw deliveries verified again, offline, and their events
    /// re-published with the ce_ids they had, which the projection then skips as duplicates.
    @Suite("tollgate replay")
    struct RawReplay {
        @Test("--dry-run lists exactly the delivered ce_ids; a real replay re-publishes them unchanged and nothing downstream moves")
        func replayApple() async throws {
            let dev = try DevEndToEndTests.dev()
            // A delivery of its own; the suite's other Apple deliveries, if any ran first, are on raw.apple too.
            let purchase = ApplePurchase(product: "pro.replay")
            let subscribed = try purchase.subscribed(chain: dev.chain)
            #expect(try await dev.post(subscribed).status == 200)
            let before = try await dev.entitlements(user: purchase.user, until: "the subscription is projected") { !$0.entitlements.isEmpty }
            let delivered = await dev.appleDeliveries.eventIds.sorted()
            let appleEventIds = { () async throws -> [String] in
                try await dev.records("tollgate.events").filter { $0.headerString("ce_source")?.hasPrefix("/apple/") == true }
                    .compactMap { $0.headerString("ce_id") }.sorted()
            }
            #expect(try await appleEventIds() == delivered)

            let dryRun = try await dev.cli(["replay", "--from", "raw.apple", "--dry-run"])
            #expect(dryRun.status == 0, "\(dryRun.stderr)")
            #expect(Self.eventIds(dryRun.stdout).sorted() == delivered)
            #expect(dryRun.stderr.contains("\(delivered.count) deliveries read, \(delivered.count) events would be published, 0 refused"))
            #expect(try await appleEventIds() == delivered, "a dry run publishes nothing")
            // --since and --until select by when the delivery arrived: the test's own came last.
            let ownRaw = try #require(try await dev.records("tollgate.raw.apple").first { $0.headerString("ce_id") == subscribed.eventId })
            let arrived = Timestamp(millisecondsSince1970: ownRaw.timestampMs ?? 0).rfc3339
            let since = try await dev.cli(["replay", "--from", "raw.apple", "--dry-run", "--since", arrived])
            #expect(Self.eventIds(since.stdout) == [subscribed.eventId])
            let until = try await dev.cli(["replay", "--from", "raw.apple", "--dry-run", "--until", arrived])
            #expect(Self.eventIds(until.stdout).sorted() == delivered.filter { $0 != subscribed.eventId })

            // Measured once the projection and the outbox are at rest.
            _ = try await dev.eventually("the outbox is empty") { () -> Bool? in
                try await dev.withStore { try await $0.pendingChanges(limit: 100) }.isEmpty ? true : nil
            }
            let published = try await dev.records("tollgate.entitlements").count
            let duplicate = [#"outcome="duplicate""#]
            let duplicatesBefore = try await dev.metric("tollgate_worker_events_total", duplicate)

            let replay = try await dev.cli(["replay", "--from", "raw.apple"])
            #expect(replay.status == 0, "\(replay.stderr)")
            #expect(replay.stdout.isEmpty)
            #expect(replay.stderr.contains("\(delivered.count) deliveries read, \(delivered.count) events published, 0 refused"))
            #expect(!replay.stderr.contains("differs"))
            #expect(try await appleEventIds() == delivered.flatMap { [$0, $0] }, "each ce_id twice, the same ids")
            // Verified and normalized again from the same bytes and arrival time: the very same records.
            let copies = Dictionary(grouping: try await dev.records("tollgate.events").filter { delivered.contains($0.headerString("ce_id") ?? "") }) {
                $0.headerString("ce_id") ?? ""
            }
            for (id, records) in copies {
                #expect(Set(records.map(\.value)).count == 1, "\(id): the same event JSON")
                #expect(Set(records.map(\.keyString)).count == 1, "\(id): the same key")
                #expect(Set(records.map { $0.headers.map(\.name) + $0.headers.compactMap(\.stringValue) }).count == 1, "\(id): the same headers")
            }

            // Every replayed event that changed a purchase the first time is now a duplicate.
            let applied = Double(await dev.appleDeliveries.purchaseEventIds.count)
            _ = try await dev.eventually("the projection sees every replayed event") { () -> Bool? in
                try await dev.metric("tollgate_worker_events_total", duplicate) >= duplicatesBefore + applied ? true : nil
            }
            #expect(try await dev.metric("tollgate_worker_events_total", duplicate) == duplicatesBefore + applied)
            let after = try await dev.entitlements(user: purchase.user)
            #expect(try JSONDecoder().decode(EntitlementsBody.self, from: after.data) == before)
            #expect(try await dev.withStore { try await $0.pendingChanges(limit: 100) }.isEmpty)
            #expect(try await dev.records("tollgate.entitlements").count == published)
        }

        @Test("--from names the raw topic of a known sender: raw.nosuch exits 2, listing them")
        func unknownSource() async throws {
            let dev = try DevEndToEndTests.dev()
            let result = try await dev.cli(["replay", "--from", "raw.nosuch"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("--from must be raw.<source>"))
            #expect(result.stderr.contains("raw.apple"))
        }

        /// The ce_ids a dry run lists, one event per line: `<ce_id>  <type>  <subject>`.
        static func eventIds(_ output: String) -> [String] {
            output.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        }
    }
}
