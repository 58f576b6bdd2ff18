import ArgumentParser
import Workers

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
        let workers = try await Components.workers(config: config, brokers: brokers, logger: logger)
        let server = WorkerServer(host: config.http.host, port: config.api.port, api: workers.api, store: workers.store,
                                  exposition: { ProcessMetrics.registry.emitToString() }, logger: logger)
        try await Components.run(workers.services + [server.makeApplication { port in
            logger.info("workers listening", metadata: ["address": .string("\(config.http.host):\(port)")])
        }], shutdown: config.shutdown, logger: logger)
        await workers.store.close()
    }
}
