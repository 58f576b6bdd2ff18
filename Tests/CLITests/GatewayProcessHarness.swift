import Events
import Foundation
import Kafka
import TestSupport
import Testing
import Verifiers

/// `tollgate serve` as a child process against the test's own embedded broker (which outlives the
/// gateway, so a test can kill and restart the gateway, or take the brokers down), with a spool in
/// a fresh directory and steady signed Apple traffic from `DeliveryLoad`.
final class GatewayProcessHarness: Sendable {
    static let bundleId = "com.example.crash"

    let directory: URL
    let cluster: MockCluster
    let chain: AppleTestChain
    let configPath: String
    let address = GatewayAddress()
    let load: DeliveryLoad
    let topics = TopicNames(sources: SenderCatalog.standard.names)

    init(gracePeriodMs: Int = 25_000, drainDelayMs: Int = 0) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        cluster = try MockCluster(brokers: 1)
        for topic in topics.all { try cluster.createTopic(topic.name, partitions: 3) }
        chain = try AppleTestChain()
        let rootPath = directory.appendingPathComponent("apple-root.pem").path
        try Data(chain.root.pem.utf8).write(to: URL(fileURLWithPath: rootPath))
        let config = """
            http: { host: 127.0.0.1, port: 0 }
            log: { level: info }
            kafka: { brokers: "\(cluster.bootstrapServers)", ackTimeoutMs: 1000 }
            spool: { path: \(directory.appendingPathComponent("spool.sqlite").path) }
            shutdown: { gracePeriodMs: \(gracePeriodMs), drainDelayMs: \(drainDelayMs) }
            sources:
              apple:
                roots: [\(rootPath)]
                apps: [{ bundleId: \(Self.bundleId), appAppleId: 1234, environments: [Sandbox] }]
            """
        configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        let chain = chain, address = address, run = String(UUID().uuidString.prefix(8))
        load = DeliveryLoad(make: { index in try chain.loadDelivery(index, run: run, bundleId: Self.bundleId) },
                            post: { body in
                                try? await HTTP.request("POST", address.baseURL + "/webhooks/apple",
                                                        headers: ["Content-Type": "application/json"], body: body).status
                            })
    }

    /// Starts (or restarts) the gateway on the same spool and points the load at it.
    func startGateway() async throws -> ChildProcess {
        let process = try ChildProcess(["serve", "--config", configPath], directory: directory, name: "gateway")
        address.set(try await process.gatewayPort())
        return process
    }

    /// Starts the gateway and three senders, and returns once `acknowledged` deliveries got their 2xx.
    func startUnderLoad(acknowledged: Int) async throws -> ChildProcess {
        let gateway = try await startGateway()
        load.start(senders: 3)
        await load.waitForAcknowledged(acknowledged)
        return gateway
    }

    /// Stops the load once `more` further deliveries were acknowledged, waits for the spool to drain
    /// and checks the topic against the acknowledgements.
    func finish(after more: Int, _ scenario: String) async throws {
        await load.waitForAcknowledged(load.acknowledgedCount + more)
        let report = await load.stop()
        try await waitForEmptySpool()
        try await verify(report, scenario)
    }

    /// `/readyz`'s spool record count.
    func spoolRecords() async throws -> Int? {
        let body = try await HTTP.request("GET", address.baseURL + "/readyz").body
        let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return (json?["spool"] as? [String: Any])?["records"] as? Int
    }

    func waitForEmptySpool() async throws {
        _ = try await eventually("the relay drains the spool", within: .seconds(90)) { () -> Bool? in
            try await spoolRecords() == 0 ? true : nil
        }
    }

    /// Every acknowledged ce_id is on tollgate.events, and no other; prints the numbers for docs/durability.md.
    func verify(_ report: DeliveryLoad.Report, _ scenario: String, allowUnacknowledged: Bool = false) async throws {
        let ids = try await TopicRecords.read(topics.events, bootstrap: cluster.bootstrapServers).compactMap { $0.headerString("ce_id") }
        let published = Set(ids)
        if !allowUnacknowledged { #expect(report.unacknowledged.isEmpty, "every sender got its 2xx by retrying: \(report)") }
        #expect(report.acknowledged.count > 0)
        let lost = report.acknowledged.subtracting(published)
        let unexpected = published.subtracting(report.acknowledged)
        #expect(lost.isEmpty, "acknowledged but not on tollgate.events: \(lost.prefix(5))")
        #expect(unexpected.isEmpty, "on tollgate.events but never acknowledged: \(unexpected.prefix(5))")
        print("durability: scenario=\"\(scenario)\" \(report) published=\(published.count) lost=\(lost.count) duplicates=\(ids.count - published.count)")
    }

    func removeDirectory() {
        try? FileManager.default.removeItem(at: directory)
    }
}
