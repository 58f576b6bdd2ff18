import ArgumentParser
import ServiceHost
import Outbound
import Workers

struct WorkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "work", abstract: "Run the entitlement workers only.")

    @OptionGroup var options: ConfigOptions

    @Flag(help: "Run the reconciliations once at start, instead of an interval after they last moved a checkpoint.")
    var reconcileNow = false

    func run() async throws {
        let config = try options.load()
        guard let brokers = config.kafka.brokers else {
            Output.error("tollgate: configuration error: kafka.brokers: is required for work")
            throw ExitCode(2)
        }
        let logger = LoggingSetup.bootstrap(config.log)
        let host = config.http.host
        let metricsHost = config.metrics.host ?? host
        let metricsListener = config.metrics.port.map { port in
            EntitlementWorkers.MetricsListener(host: metricsHost, port: port) { bound in
                logger.info("metrics listening", metadata: ["address": .string("\(metricsHost):\(bound)")])
                Output.line("metrics: listening on http://\(metricsHost):\(bound)/metrics")
            }
        }
        let listener = EntitlementWorkers.APIListener.own(host: host, port: config.api.port,
                                                          exposition: { ProcessMetrics.registry.emitToString() }, onListening: { port in
            logger.info("workers listening", metadata: ["address": .string("\(host):\(port)")])
            Output.line("workers: listening on http://\(host):\(port)")
        }, metrics: metricsListener)
        let workers = try await EntitlementWorkers.open(config: config, kafka: config.kafka.client(brokers: brokers),
                                                        metrics: WorkerMetrics(factory: ProcessMetrics.factory),
                                                        playAPIFetcher: HTTPClientFetcher(), listener: listener, reconcileNow: reconcileNow,
                                                        localMetrics: { ProcessMetrics.registry.emitToString() }, logger: logger)
        try await ProcessRunner.run(StopOrder([.stop("workers", workers)]), shutdown: config.shutdown, logger: logger)
    }
}
