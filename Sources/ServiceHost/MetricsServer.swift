import Hummingbird
import Logging

/// `/metrics` on a listener of its own (`metrics.port`), so the Prometheus exposition stays off the
/// port that faces the senders (the gateway's) or the merchant's services (the workers'): the
/// deployment exposes that port to Prometheus only. Nothing else is served there (404, 405 for
/// another method).
public struct MetricsServer: Sendable {
    let host: String
    let port: Int
    let exposition: @Sendable () -> String
    let logger: Logger

    public init(host: String, port: Int, exposition: @escaping @Sendable () -> String, logger: Logger) {
        self.host = host
        self.port = port
        self.exposition = exposition
        self.logger = logger
    }

    /// As a `Service`; `onListening` receives the bound port (useful with port 0).
    public func makeApplication(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: ProtocolErrorMiddleware(methods: ["/metrics": [.get]]))
        HealthRoutes.registerMetrics(exposition, on: router)
        return Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "tollgate-metrics"),
            onServerRunning: { [port] channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
    }
}
