import Events
import Foundation
import Verifiers

/// `tollgate-load prepare`: every sender generates its keys and identities into one directory (each in
/// its own folder's `prepareLoad`), and the gateway configuration that trusts them is written beside
/// them. `tollgate-load run` reads them back to sign the traffic. Nothing here is a real secret.
enum BenchSetup {
    static let configFile = "tollgate.yaml"
    /// `tollgate work`'s: the same senders (the Apple root verifies reported purchases), its own API port
    /// (0: it picks one and prints it), a SQLite store in the directory, the purchases API's token.
    static let workersConfigFile = "workers.yaml"
    /// `tollgate dev`'s for the same purchases: the workers' without their broker (it embeds its own).
    static let devConfigFile = "dev.yaml"

    static func prepare(in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let sections = try SenderCatalog.standard.prepareLoad(in: directory)
        let gateway = gatewayConfig(directory: directory, sections: sections)
        try Data(gateway.utf8).write(to: URL(fileURLWithPath: directory + "/" + configFile))
        let api = """
        api:
          port: 0
          # The merchant's backend: one credential for the whole load, its rate above what the bench reaches.
          tokens: [{ token: \(ApplePurchaseLoadTraffic.token), ratePerSecond: 1000000, rateBurst: 1000000 }]

        """
        // `tollgate dev` as it ships: its embedded broker, its own store.
        let dev = gateway + api + """
        store:
          url: "sqlite:\(directory)/dev-store.sqlite"

        """
        try Data(dev.utf8).write(to: URL(fileURLWithPath: directory + "/" + devConfigFile))
        let workers = gateway + api + """
        store:
          url: "sqlite:\(directory)/store.sqlite"
        kafka:
          # The bench's broker is librdkafka's mock, which answers a fetch only when its wait ends; a real
          # broker answers as records arrive, which a few milliseconds stand for (docs/performance.md).
          properties: { fetch.wait.max.ms: "5" }

        """
        try Data(workers.utf8).write(to: URL(fileURLWithPath: directory + "/" + workersConfigFile))
    }

    /// The gateway's configuration: every sender trusts the generated keys. `kafka.brokers` comes from
    /// `TOLLGATE_KAFKA_BROKERS` (the embedded broker's port is known only once it runs); port 0 lets
    /// the gateway pick a free port, which it prints. Logging stays as in production (info, JSON),
    /// since logging each accepted delivery is part of what a request costs.
    static func gatewayConfig(directory: String, sections: [(name: SourceName, section: String)]) -> String {
        """
        # Written by `tollgate-load prepare` for `make bench`: generated keys and secrets, nothing real.
        http:
          host: 127.0.0.1
          port: 0
        spool:
          path: "\(directory)/spool.sqlite"
        log:
          level: info
          format: json
        sources:
        \(sections.map { "  \($0.name.rawValue): \($0.section)" }.joined(separator: "\n"))

        """
    }
}

struct LoadGenError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func required<T>(_ value: T?, _ what: String) throws -> T {
    guard let value else { throw LoadGenError("\(what) failed") }
    return value
}
