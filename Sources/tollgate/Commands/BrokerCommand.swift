import ArgumentParser
import Config
import UnixSignals

struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker",
        abstract: "Run the embedded Kafka-protocol broker (librdkafka mock cluster) alone, with Tollgate's topics.",
        discussion: """
            For development, tests and benchmarks: it keeps everything in memory, at most about 5 MiB or 100,000 \
            message sets a partition, and beyond that drops a partition's oldest records whether or not they were \
            consumed. Run alone, it cannot know what a consumer in another process applied, so unlike tollgate dev \
            (which refuses deliveries before its workers fall that far behind) a gateway on it answers 2xx for \
            what it may drop: use a real cluster (kafka.brokers, docs/deploying.md, section 4) for anything else.
            """)

    @Option(help: "Number of brokers in the cluster.")
    var brokers = 1

    @Option(help: "Write the bootstrap servers as one line to this file once listening.")
    var portFile: String?

    @OptionGroup var options: ConfigOptions

    func validate() throws {
        guard (1...16).contains(brokers) else { throw ValidationError("--brokers must be between 1 and 16") }
    }

    func run() async throws {
        let config = try options.load()
        let cluster = try EmbeddedBroker.start(brokers: brokers, topics: config.topicNames)
        if let portFile { try EmbeddedBroker.writeBootstrap(cluster.bootstrapServers, to: portFile) }
        Output.line(cluster.bootstrapServers)
        for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) { break }
        withExtendedLifetime(cluster) {}
    }
}
