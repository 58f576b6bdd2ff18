import Events
import Foundation
import Synchronization
import Testing
@testable import Merchant
@testable import ProviderAPIs

/// The verifier's Play answers, kept for the projection of the events they produced: taken once, only
/// by a reported purchase's event, within their minute.
@Suite("Play reads shared by the purchase verifier and the projection")
struct PlayPurchaseReadsTests {
    static func event(token: String, reported: Bool) -> NormalizedEvent {
        var event = GoogleEnrichmentTests.event(.subscriptionStarted, token: token)
        event.sourceType = reported ? NormalizedEvent.reportedPurchaseSourceType : "SUBSCRIPTION_PURCHASED"
        return event
    }

    static func subscription() throws -> SubscriptionPurchaseV2 {
        try JSONDecoder().decode(SubscriptionPurchaseV2.self, from: Data(PlayFixtures.activeSubscription.utf8))
    }

    @Test("a reported purchase's event takes the verifier's read once; a store's notification never takes it")
    func takenOnceByReportedEvents() throws {
        let reads = PlayPurchaseReads()
        let read = try Self.subscription()
        reads.keep(read, packageName: PlayHarness.package, token: "tok-1")
        #expect(reads.takeSubscription(for: Self.event(token: "tok-1", reported: false)) == nil)
        #expect(reads.takeSubscription(for: Self.event(token: "tok-2", reported: true)) == nil)
        #expect(reads.takeSubscription(for: Self.event(token: "tok-1", reported: true)) == read)
        #expect(reads.takeSubscription(for: Self.event(token: "tok-1", reported: true)) == nil)
    }

    @Test("a read older than a minute is not taken: the projection asks Google")
    func expires() throws {
        let clock = Mutex<Int64>(1_000_000)
        let reads = PlayPurchaseReads(now: { clock.withLock { $0 } })
        reads.keep(try Self.subscription(), packageName: PlayHarness.package, token: "tok-1")
        clock.withLock { $0 += PlayPurchaseReads.lifetimeMs }
        #expect(reads.takeSubscription(for: Self.event(token: "tok-1", reported: true)) == nil)
    }
}
