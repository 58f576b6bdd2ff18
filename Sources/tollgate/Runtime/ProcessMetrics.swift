import Metrics
import Prometheus

/// One Prometheus registry per process, also behind swift-metrics' global factory, so the gateway,
/// the workers and the Play API client all appear on the same `/metrics`.
enum ProcessMetrics {
    static let registry = PrometheusCollectorRegistry()

    /// The factory over `registry`, installed as the global one the first time it is asked for.
    static let factory: PrometheusMetricsFactory = {
        let factory = PrometheusMetricsFactory(registry: registry)
        MetricsSystem.bootstrap(factory)
        return factory
    }()
}
