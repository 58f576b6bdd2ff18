import ArgumentParser
import ServiceHost
import Outbound
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
        let host = config.http.host
        let listener = EntitlementWorkers.APIListener.own(host: host, port: config.api.port,
                                                          exposition: { ProcessMetrics.registry.emitToString() }) { port in
            logger.info("workers listening", metadata: ["address": .string("\(host):\(port)")])
        }
        let workers = try await EntitlementWorkers.open(config: config, kafka: config.kafka.client(brokers: brokers),
                                                        metrics: WorkerMetrics(factory: ProcessMetrics.factory),
                                                        playAPIFetcher: URLSessionFetcher(), listener: listener, logger: logger)
        try await ProcessRunner.run(StopOrder([.stop("workers", workers)]), shutdown: config.shutdown, logger: logger)
    }
}
