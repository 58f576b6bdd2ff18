import Config
import Foundation
import Gateway
import Kafka
import Spool
import TestSupport
import Testing
import Verifiers

/// Steady signed Apple traffic against a real gateway (spool on, `kafka.ackTimeoutMs` 1 s) while the
/// embedded broker misbehaves. After recovery, the topic must hold every acknowledged ce_id and no
/// other; duplicates are counted and printed for docs/durability.md.
@Suite("Fault injection: every acknowledged delivery reaches tollgate.events", .serialized)
struct FaultInjectionTests {
    static let bundleId = "com.example.durability"

    struct Scenario {
        let harness: GatewayHarness
        let load: DeliveryLoad
        let chain: AppleTestChain
    }

    static func start(spool: Bool = true, spoolMaxBytes: Int = 100_000_000, senders: Int = 4) async throws -> Scenario {
        let chain = try AppleTestChain()
        let rootPath = try SpoolTests.temporaryPath().replacingOccurrences(of: "spool.sqlite", with: "root.pem")
        try Data(chain.root.pem.utf8).write(to: URL(fileURLWithPath: rootPath))
        var apple = AppleSettings()
        apple.roots = [rootPath]
        apple.apps = [AppleSettings.App(bundleId: bundleId, appAppleId: 1234, environments: ["Sandbox"])]
        let spoolOptions: (path: String, maxBytes: Int)? = spool ? (try SpoolTests.temporaryPath(), spoolMaxBytes) : nil
        let harness = try await GatewayHarness(ackTimeoutMs: 1_000, apple: apple, brokers: 3, partitions: 3, spool: spoolOptions)
        let run = UUID().uuidString.prefix(8)
        let client = harness.client
        let load = DeliveryLoad(make: { index in try chain.loadDelivery(index, run: String(run), bundleId: bundleId) },
                                post: { body in
                                    try? await client.request("POST", "/webhooks/apple", headers: ["Content-Type": "application/json"],
                                                              body: body).status
                                })
        load.start(senders: senders)
        return Scenario(harness: harness, load: load, chain: chain)
    }

    /// Stops the load, waits for the spool to drain, and checks the topic against the acknowledgements.
    static func verify(_ scenario: Scenario, _ name: String) async throws -> DeliveryLoad.Report {
        let report = await scenario.load.stop()
        let harness = scenario.harness
        if let spool = harness.spool {
            let deadline = ContinuousClock.now + .seconds(90)
            while !spool.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
            #expect(spool.isEmpty, "the relay drained the spool after recovery")
        }
        let records = try await TopicRecords.read(harness.topics.events, bootstrap: harness.cluster.bootstrapServers)
        let ids = records.compactMap { $0.headerString("ce_id") }
        let published = Set(ids)
        #expect(report.unacknowledged.isEmpty, "every sender got its 2xx by retrying: \(report)")
        #expect(report.acknowledged.count > 0)
        let lost = report.acknowledged.subtracting(published)
        let unexpected = published.subtracting(report.acknowledged)
        #expect(lost.isEmpty, "acknowledged but not on tollgate.events: \(lost.prefix(5))")
        #expect(unexpected.isEmpty, "on tollgate.events but never acknowledged: \(unexpected.prefix(5))")
        let spooled = try await harness.metric("tollgate_deliveries_written_total", ["outcome": "spooled"])
        print("durability: scenario=\"\(name)\" \(report) published=\(published.count) lost=\(lost.count) duplicates=\(ids.count - published.count) spooled=\(Int(spooled))")
        return report
    }

    @Test("all brokers down until deliveries spool, then up: deliveries go to the spool and are relayed; /readyz stays ready")
    func brokersDown() async throws {
        let scenario = try await Self.start()
        await scenario.load.waitForAcknowledged(40)
        scenario.harness.cluster.setAllBrokers(up: false)
        // Awaited, not slept: on a busy machine the first delivery to time out may take longer than 3 s.
        #expect(try await eventually(timeout: .seconds(60)) {
            try await scenario.harness.metric("tollgate_deliveries_written_total", ["outcome": "spooled"]) > 0
        }, "no delivery went to the spool while the brokers were down")
        let ready = try await scenario.harness.client.request("GET", "/readyz")
        #expect(ready.status == 200, "the spool has room: \(ready.body)")
        #expect(ready.body.contains(#""kafka":"unreachable""#))
        scenario.harness.cluster.setAllBrokers(up: true)
        try await Task.sleep(for: .seconds(1))
        _ = try await Self.verify(scenario, "all brokers down 3 s")
        await scenario.harness.stop()
    }

    @Test("Produce answered NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT, and dropped connections")
    func produceErrors() async throws {
        let scenario = try await Self.start()
        await scenario.load.waitForAcknowledged(40)
        scenario.harness.cluster.failNextProduceRequests(Array(repeating: .notEnoughReplicas, count: 40)
            + Array(repeating: .requestTimedOut, count: 40) + Array(repeating: .disconnect, count: 5))
        try await Task.sleep(for: .seconds(3))
        _ = try await Self.verify(scenario, "produce errors")
        await scenario.harness.stop()
    }

    @Test("round-trip latency above the ack timeout for 3 s: deliveries are spooled, then relayed")
    func latency() async throws {
        let scenario = try await Self.start()
        await scenario.load.waitForAcknowledged(40)
        scenario.harness.cluster.setRoundTripTime(milliseconds: 1_500)
        try await Task.sleep(for: .seconds(3))
        // A delivery is spooled a second after it was sent, once its fsync returns: on a machine busy
        // with other disk writes that can take longer than the 3 s above, so wait for the first one.
        let deadline = ContinuousClock.now + .seconds(20)
        while try await scenario.harness.metric("tollgate_deliveries_written_total", ["outcome": "spooled"]) == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(try await scenario.harness.metric("tollgate_deliveries_written_total", ["outcome": "spooled"]) > 0)
        scenario.harness.cluster.setRoundTripTime(milliseconds: 0)
        _ = try await Self.verify(scenario, "latency 1.5 s > ack timeout")
        await scenario.harness.stop()
    }

    @Test("partition leaders move between brokers under load")
    func leaderChanges() async throws {
        let scenario = try await Self.start()
        let cluster = scenario.harness.cluster
        await scenario.load.waitForAcknowledged(40)
        for broker in [2, 3, 1] {
            for topic in [scenario.harness.topics.events, scenario.harness.topics.raw(.apple)] {
                for partition in Int32(0)..<3 { cluster.setLeader(topic: topic, partition: partition, broker: broker) }
            }
            try await Task.sleep(for: .seconds(1))
        }
        _ = try await Self.verify(scenario, "leader changes")
        await scenario.harness.stop()
    }

    @Test("a full spool answers 503 with Retry-After; senders retry and nothing acknowledged is lost")
    func spoolFull() async throws {
        let scenario = try await Self.start(spoolMaxBytes: 60_000)
        await scenario.load.waitForAcknowledged(20)
        scenario.harness.cluster.setAllBrokers(up: false)
        let deadline = ContinuousClock.now + .seconds(30)
        while (scenario.harness.spool?.stats.bytes ?? 0) < 50_000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(2))
        let refused = try await scenario.harness.metric("tollgate_rejections_total", ["source": "apple", "reason": "not_durable"])
        #expect(refused > 0, "deliveries past the spool's bound were refused")
        let ready = try await scenario.harness.client.request("GET", "/readyz")
        scenario.harness.cluster.setAllBrokers(up: true)
        let report = try await Self.verify(scenario, "spool full (60 kB), brokers down")
        #expect((report.statuses[503] ?? 0) > 0)
        #expect(ready.status == 503, "a full spool with Kafka down is not ready")
        #expect(ready.body.contains("the spool is full"), "\(ready.body)")
        await scenario.harness.stop()
    }

    @Test("spool disabled: a delivery Kafka cannot acknowledge is answered 503 not_durable with Retry-After")
    func spoolDisabled() async throws {
        let scenario = try await Self.start(spool: false, senders: 1)
        await scenario.load.waitForAcknowledged(5)
        scenario.harness.cluster.setAllBrokers(up: false)
        let delivery = try scenario.chain.loadDelivery(0, run: "direct", bundleId: Self.bundleId)
        let refused = try await scenario.harness.client.request("POST", "/webhooks/apple", headers: ["Content-Type": "application/json"],
                                                                body: delivery.body)
        #expect(refused.status == 503)
        #expect(refused.headers["retry-after"] != nil)
        #expect(refused.body.contains(#""error":"not_durable""#))
        let ready = try await scenario.harness.client.request("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.body.contains("spool is disabled"))
        scenario.harness.cluster.setAllBrokers(up: true)
        let report = try await Self.verify(scenario, "spool disabled, brokers down")
        #expect((report.statuses[503] ?? 0) > 0)
        await scenario.harness.stop()
    }
}
