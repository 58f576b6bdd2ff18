import Gateway
import Metrics
import Prometheus
import ServiceHost
import Workers

/// One Prometheus registry per process, also behind swift-metrics' global factory, so the gateway,
/// the workers and the Play API client all appear on the same `/metrics`, each family with its help.
enum ProcessMetrics {
    static let registry = PrometheusCollectorRegistry()

    /// The factory over `registry`, installed as the global one the first time it is asked for.
    static let factory: PrometheusFamiliesFactory = {
        let factory = PrometheusFamiliesFactory(registry: registry, families: GatewayMetrics.families + WorkerMetrics.all)
        MetricsSystem.bootstrap(factory)
        return factory
    }()
}
