import ArgumentParser
import Kafka

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Everything in one process for a laptop: embedded broker, gateway and workers.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "Where to write the embedded broker's bootstrap servers.")
    var bootstrapFile = ".tollgate/bootstrap"

    func run() async throws {
        let config = try options.load()
        let logger = LoggingSetup.bootstrap(config.log)
        var cluster: MockCluster?
        let brokers: String
        if let configured = config.kafka.brokers {
            brokers = configured
        } else {
            let embedded = try EmbeddedBroker.start(brokers: 1, topics: config.topicNames)
            try EmbeddedBroker.writeBootstrap(embedded.bootstrapServers, to: bootstrapFile)
            cluster = embedded
            brokers = embedded.bootstrapServers
            Output.line("kafka: embedded broker at \(brokers) (written to \(bootstrapFile))")
        }
        let host = config.http.host
        let workers = try await Components.workers(config: config, brokers: brokers, logger: logger)
        let api = workers.api
        let gateway = try await Components.gateway(config: config, brokers: brokers, logger: logger,
                                             additionalRoutes: { api.register(on: $0) }) { port in
            Output.line("gateway: listening on http://\(host):\(port) (entitlement API: /v1/users/{user}/entitlements)")
        }
        Output.line("store: \(workers.store.database.redactedURL)")
        // Workers listed first stop last: the gateway stops taking deliveries before the consumers stop.
        try await Components.run(workers.services + gateway, shutdown: config.shutdown, logger: logger)
        await workers.store.close()
        withExtendedLifetime(cluster) {}
    }
}
