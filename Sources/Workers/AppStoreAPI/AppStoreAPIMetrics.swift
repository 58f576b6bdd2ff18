import Metrics

/// `tollgate_app_store_api_request_duration_seconds{call}` for every HTTP exchange (answered or not)
/// and `tollgate_app_store_api_errors_total{call, kind}` for every failed call.
struct AppStoreAPIMetrics: Sendable {
    let factory: any MetricsFactory

    func requestDuration(_ call: AppStoreAPICall, _ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Metrics.Timer(label: "tollgate_app_store_api_request_duration_seconds", dimensions: [("call", call.rawValue)], factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func error(_ error: AppStoreAPIError) {
        Counter(label: "tollgate_app_store_api_errors_total", dimensions: [("call", error.call.rawValue), ("kind", error.kindLabel)],
                factory: factory).increment()
    }
}
