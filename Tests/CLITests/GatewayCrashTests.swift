import Foundation
import Testing

/// `kill -9` of `tollgate serve` in the middle of signed traffic: after a restart on the same spool,
/// every delivery that got a 2xx is on tollgate.events (published before the crash, or relayed from
/// the spool after it), and no other.
@Suite("Crash safety: tollgate serve killed with SIGKILL under load", .serialized)
struct GatewayCrashTests {
    @Test("killed while Kafka acknowledges everything; restarted")
    func killedHealthy() async throws {
        let harness = try GatewayProcessHarness()
        defer { harness.removeDirectory() }
        let first = try await harness.startUnderLoad(acknowledged: 30)
        await first.crash()
        let second = try await harness.startGateway()
        try await harness.finish(after: 30, "gateway SIGKILL, Kafka healthy")
        await second.kill()
    }

    @Test("killed while the spool holds deliveries (brokers down); restarted once Kafka is back: the spool is relayed")
    func killedWithSpool() async throws {
        let harness = try GatewayProcessHarness()
        defer { harness.removeDirectory() }
        let first = try await harness.startUnderLoad(acknowledged: 20)
        harness.cluster.setAllBrokers(up: false)
        let spooled = try await eventually("deliveries wait in the spool", within: .seconds(60)) { () -> Int? in
            let records = try await harness.spoolRecords() ?? 0
            return records >= 10 ? records : nil
        }
        #expect(spooled >= 10)
        await first.crash()
        harness.cluster.setAllBrokers(up: true)
        let second = try await harness.startGateway()
        #expect(second.output.contains("spool holds deliveries from before the restart"))
        try await harness.finish(after: 20, "gateway SIGKILL with \(spooled)+ spooled, brokers down then up")
        await second.kill()
    }
}

/// SIGTERM: readiness fails first, in-flight requests finish, the producer flushes, the spool closes;
/// a second SIGTERM or the end of `shutdown.gracePeriodMs` exits at once.
@Suite("Graceful shutdown of tollgate serve", .serialized)
struct GracefulShutdownTests {
    @Test("under load: /readyz fails during the drain delay, every acknowledged delivery is on the topic, exit 0")
    func underLoad() async throws {
        let harness = try GatewayProcessHarness(drainDelayMs: 1_500)
        defer { harness.removeDirectory() }
        let gateway = try await harness.startUnderLoad(acknowledged: 30)
        gateway.signal(SIGTERM)
        let readiness = try await eventually("/readyz fails while the gateway drains", within: .seconds(5), every: .milliseconds(50)) {
            () -> HTTP.Response? in
            let response = try await HTTP.request("GET", harness.address.baseURL + "/readyz")
            return response.status == 503 ? response : nil
        }
        #expect(readiness.body.contains("shutting down"))
        // Requests are still served during the drain delay.
        let before = harness.load.acknowledgedCount
        await harness.load.waitForAcknowledged(before + 3, timeout: .seconds(1))
        let status = await gateway.waitForExit(within: .seconds(30))
        #expect(status == 0, "\(gateway.output.suffix(2_000))")
        // Deliveries refused once the listener closed are still being retried: they were never acknowledged.
        let report = await harness.load.stop(retryingFor: .milliseconds(500))
        try await harness.verify(report, "SIGTERM under load", allowUnacknowledged: true)
        #expect(gateway.output.contains("shutting down"))
    }

    @Test("a second SIGTERM exits at once, even with a request still in flight")
    func secondSignal() async throws {
        let harness = try GatewayProcessHarness()
        defer { harness.removeDirectory() }
        let gateway = try await harness.startGateway()
        let port = try await gateway.gatewayPort()
        let held = try HeldConnection.unfinishedRequest(port: port)
        defer { held.close() }
        try await Task.sleep(for: .milliseconds(200))
        gateway.signal(SIGTERM)
        #expect(await gateway.waitForExit(within: .seconds(1)) == nil, "the in-flight request holds the graceful shutdown")
        gateway.signal(SIGTERM)
        let status = await gateway.waitForExit(within: .seconds(5))
        #expect(status == 128 + SIGTERM)
        #expect(gateway.output.contains("second shutdown signal: exiting now"))
        await gateway.kill()
    }

    @Test("the end of the grace period exits at once")
    func gracePeriod() async throws {
        let harness = try GatewayProcessHarness(gracePeriodMs: 1_500)
        defer { harness.removeDirectory() }
        let gateway = try await harness.startGateway()
        let port = try await gateway.gatewayPort()
        let held = try HeldConnection.unfinishedRequest(port: port)
        defer { held.close() }
        try await Task.sleep(for: .milliseconds(200))
        gateway.signal(SIGTERM)
        let status = await gateway.waitForExit(within: .seconds(20))
        #expect(status == 1)
        #expect(gateway.output.contains("graceful shutdown did not finish within the grace period"))
        await gateway.kill()
    }
}
