import ArgumentParser

struct WorkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "work", abstract: "Run the entitlement workers only.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let config = try options.load()
        guard let brokers = config.kafka.brokers else {
            Output.error("tollgate: configuration error: kafka.brokers: is required for work")
            throw ExitCode(2)
        }
        let logger = LoggingSetup.bootstrap(config.log)
        try await Components.run(Components.workers(config: config, brokers: brokers, logger: logger), logger: logger)
    }
}
