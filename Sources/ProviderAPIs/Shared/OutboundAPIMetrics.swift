import Metrics
import Toolkit

/// An outbound API client's two families: `tollgate_<api>_request_duration_seconds{call}` for every
/// HTTP exchange (answered or not) and `tollgate_<api>_errors_total{call, kind}` for every failed call.
public struct OutboundAPIMetrics<Call: RawRepresentable & Sendable>: Sendable where Call.RawValue == String {
    let factory: any MetricsFactory
    /// `play_api`, `app_store_api`.
    let api: String

    func requestDuration(_ call: Call, _ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Metrics.Timer(label: "tollgate_\(api)_request_duration_seconds", dimensions: [("call", call.rawValue)], factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func error(_ call: Call, kind: String) {
        Counter(label: "tollgate_\(api)_errors_total", dimensions: [("call", call.rawValue), ("kind", kind)], factory: factory).increment()
    }
}

/// The Play Developer API client's metrics.
typealias PlayAPIMetrics = OutboundAPIMetrics<PlayAPICall>
/// The App Store Server API client's metrics.
typealias AppStoreAPIMetrics = OutboundAPIMetrics<AppStoreAPICall>

extension OutboundAPIMetrics where Call == PlayAPICall {
    init(factory: any MetricsFactory) { self.init(factory: factory, api: "play_api") }
}

extension OutboundAPIMetrics where Call == AppStoreAPICall {
    init(factory: any MetricsFactory) { self.init(factory: factory, api: "app_store_api") }
}

/// The provider API clients' families (the workers process emits them: `WorkerMetrics.all`).
public enum ProviderAPIMetrics {
    public static let families: [MetricFamily] = [
        MetricFamily("tollgate_app_store_api_request_duration_seconds", .histogram, labels: ["call"],
                     help: "App Store Server API requests, answered or not, by endpoint."),
        MetricFamily("tollgate_app_store_api_errors_total", .counter, labels: ["call", "kind"],
                     help: "App Store Server API calls that failed, by endpoint and kind (http_<status>, rate_limited, timeout, network, decode, signing)."),
        MetricFamily("tollgate_play_api_request_duration_seconds", .histogram, labels: ["call"], help: "Play Developer API exchanges, answered or not, by call."),
        MetricFamily("tollgate_play_api_errors_total", .counter, labels: ["call", "kind"], help: "Failed Play Developer API calls, by call and kind."),
        MetricFamily("tollgate_antom_api_request_duration_seconds", .histogram, labels: ["call"],
                     help: "Antom API exchanges (pay, refund), answered or not, by call."),
        MetricFamily("tollgate_antom_api_errors_total", .counter, labels: ["call", "kind"],
                     help: "Failed Antom API calls, by call and kind (refused, timeout, network, http_<status>, bad_signature, response_time: no Response-Time or one outside checkouts.antomAnswerWindowSeconds, wrong_request_id: an answer naming another request, unknown_result, decode, signing)."),
    ]
}
