import ArgumentParser
import ServiceHost
import Gateway

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
        let metricsHost = config.metrics.host ?? host
        let gateway = try await GatewayProcess(config: config, kafka: config.kafka.client(brokers: brokers),
                                               metrics: GatewayMetrics(registry: ProcessMetrics.registry), logger: logger,
                                               onMetricsListening: { port in
            logger.info("metrics listening", metadata: ["address": .string("\(metricsHost):\(port)")])
            Output.line("metrics: listening on http://\(metricsHost):\(port)/metrics")
        }, onListening: { port in
            logger.info("listening", metadata: ["address": .string("\(host):\(port)")])
            Output.line("gateway: listening on http://\(host):\(port)")
        })
        try await ProcessRunner.run(StopOrder([.stop("gateway", gateway)]), shutdown: config.shutdown, logger: logger)
    }
}
