@testable import Console
import Foundation
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

/// The overview's numbers from `/metrics` (docs/console.md): the exposition read, the hour and day
/// windows over samples (a restarted replica, a source that did not answer), and the pages that show them.
@Suite("Operator console service numbers")
struct ServiceNumbersTests {
    static func exposition(accepted: Int, refused: Int, silence: Double = 0, lag: Int = 0) -> String {
        """
        # HELP tollgate_deliveries_accepted_total Deliveries verified and made durable, by sender.
        # TYPE tollgate_deliveries_accepted_total counter
        tollgate_deliveries_accepted_total{source="apple"} \(accepted)
        tollgate_rejections_total{source="apple",reason="signature_invalid"} \(refused)
        tollgate_rejections_total{reason="odd \\"quoted\\" \\\\ reason\\n",source="google"} 1
        tollgate_http_requests_total{route="/webhooks/apple",status="200"} 99
        tollgate_sender_silence_seconds{source="apple"} \(silence)
        tollgate_sender_silence_threshold_seconds{source="apple"} 600
        tollgate_spool_records 3
        tollgate_spool_oldest_age_seconds 42.5
        tollgate_consumer_lag{topic="tollgate.events",partition="0"} \(lag)
        tollgate_consumer_lag{topic="tollgate.events",partition="1"} \(lag)
        tollgate_kafka_reachable 1
        tollgate_deliveries_accepted_total{source="broken" 7
        tollgate_spool_records not-a-number
        """
    }

    @Test("the exposition's families are read, labels unescaped; other families, comments and lines it cannot read are skipped")
    func parse() {
        let values = ServiceNumbers.parse(Self.exposition(accepted: 5, refused: 2))
        #expect(values[.init(name: "tollgate_deliveries_accepted_total", labels: ["source": "apple"])] == 5)
        #expect(values[.init(name: "tollgate_rejections_total", labels: ["source": "google", "reason": "odd \"quoted\" \\ reason\n"])] == 1)
        #expect(values[.init(name: "tollgate_spool_records", labels: [:])] == 3)
        #expect(!values.keys.contains { $0.name == "tollgate_http_requests_total" || $0.labels["source"] == "broken" })
        #expect(values.count == 10)
    }

    @Test("a window counts each counter's increase across samples, a reset from zero, a source that missed a reading at the next; since when when samples are short")
    func windows() async {
        let text = Mutex(Self.exposition(accepted: 5, refused: 2))
        let answers = Mutex(true)
        let numbers = ServiceNumbers(sources: [
            MetricsSource(name: "local") { text.withLock { $0 } },
            MetricsSource(name: "gateway-1") {
                guard answers.withLock({ $0 }) else { throw CancellationError() }
                return text.withLock { $0 }
            },
        ])
        let start: Int64 = 1_000_000_000
        #expect(await numbers.sample(nowMs: start).isEmpty)
        text.withLock { $0 = Self.exposition(accepted: 8, refused: 2) }
        answers.withLock { $0 = false }
        #expect(await numbers.sample(nowMs: start + 60_000) == ["gateway-1"])
        // A replica restarted: its counter starts again from zero.
        text.withLock { $0 = Self.exposition(accepted: 4, refused: 3) }
        answers.withLock { $0 = true }
        let current = await numbers.read(nowMs: start + 120_000).sample
        let day = numbers.window(86_400_000, current: current)
        // local: 5 -> 8 (+3) -> 4 (reset: +4); gateway-1: 5 -> (missed) -> 4 (reset: +4).
        #expect(day.accepted["apple"] == 11)
        #expect(day.rejected["apple"]?["signature_invalid"] == 2)
        #expect(!day.complete && day.sinceMs == start)
        // An hour after the second sample, each source counts from its own last reading at or before the window's
        // start: local from the second sample (8 -> 4: a reset, +4), gateway-1 from the first (5 -> 4: +4).
        let later = await numbers.read(nowMs: start + 3_600_000 + 70_000).sample
        #expect(numbers.window(3_600_000, current: later).accepted["apple"] == 8)
        // A page's reading older than the newest sample is not compared with it (it would look like a reset).
        let stale = await numbers.read(nowMs: start + 30_000).sample
        #expect(numbers.window(86_400_000, current: stale).accepted["apple"] == 3)
        // Values no page could count by ones are not read.
        #expect(ServiceNumbers.parse("tollgate_spool_records 1e300\ntollgate_kafka_reachable 1").count == 1)
        let now = ServiceNumbers.now(current)
        #expect(now.spoolRecords == 6 && now.spoolOldestAge == 42.5 && now.silenceThreshold["apple"] == 600)
    }

    @Test("the overview shows each sender's deliveries, refusals and silence from /metrics, linked to the sender's refusals by reason", arguments: [Backend.sqlite])
    func overview(_ backend: Backend) async throws {
        let text = Mutex(Self.exposition(accepted: 5, refused: 2, silence: 3_600, lag: 4))
        let reads = Mutex(0)
        var setup = try ConsoleActionTests.setup()
        setup.metricsSources = [MetricsSource(name: "local") {
            reads.withLock { $0 += 1 }
            return text.withLock { $0 }
        }]
        // The console's clock, moved past the 10 s a page reuses the sample for.
        let clock = Mutex(Date().timeIntervalSince1970 * 1_000)
        try await WorkerHarness.with { harness in
            try await TestDatabases.withStore(backend) { store in
                try await harness.withWorkers(store: store, clock: { Int64(clock.withLock { $0 }) }, console: setup) { workers in
                    // The sampling's first reading is the windows' start.
                    try await waitUntil("the first sample", every: .milliseconds(50)) { reads.withLock { $0 } >= 1 }
                    text.withLock { $0 = Self.exposition(accepted: 9, refused: 5, silence: 3_600, lag: 4) }
                    clock.withLock { $0 += 11_000 }
                    var bob = ConsoleActionTests.Browser(routes: workers.workers.routes)
                    try await bob.signIn(ConsoleActionTests.bob)
                    let page = try await bob.call(.get, "/console").body
                    #expect(page.contains("Deliveries at the gateway") && page.contains(#"<a href="/console/senders/apple">4</a>"#))
                    #expect(page.contains(#"<a href="/console/senders/apple">3</a>"#))
                    #expect(page.contains("past its 10 min silence threshold") && page.contains("3 records, the oldest 42 s old"))
                    #expect(page.contains("tollgate.events: 8 records"))
                    let sender = try await bob.call(.get, "/console/senders/apple")
                    #expect(sender.status == 200 && sender.body.contains("signature_invalid") && sender.body.contains("<td>3</td>"))
                    #expect(try await bob.call(.get, "/console/senders/%3Cscript%3E").status == 404)
                }
            }
        }
    }
}
