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
            let embedded = try EmbeddedBroker.start(brokers: 1, topics: config.kafka.topicNames)
            try EmbeddedBroker.writeBootstrap(embedded.bootstrapServers, to: bootstrapFile)
            cluster = embedded
            brokers = embedded.bootstrapServers
            Output.line("kafka: embedded broker at \(brokers) (written to \(bootstrapFile))")
        }
        let host = config.http.host
        let services = try Components.gateway(config: config, brokers: brokers, logger: logger) { port in
            Output.line("gateway: listening on http://\(host):\(port)")
        } + Components.workers(config: config, brokers: brokers, logger: logger)
        try await Components.run(services, logger: logger)
        withExtendedLifetime(cluster) {}
    }
}
