import ArgumentParser

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the gateway only (production).")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let config = try options.load()
        guard let brokers = config.kafka.brokers else {
            Output.error("tollgate: configuration error: kafka.brokers: is required for serve (use `tollgate dev` for the embedded broker)")
            throw ExitCode(2)
        }
        let logger = LoggingSetup.bootstrap(config.log)
        let host = config.http.host
        let services = try await Components.gateway(config: config, brokers: brokers, logger: logger) { port in
            logger.info("listening", metadata: ["address": .string("\(host):\(port)")])
            Output.line("gateway: listening on http://\(host):\(port)")
        }
        try await Components.run(services, shutdown: config.shutdown, logger: logger)
    }
}
