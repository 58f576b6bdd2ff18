import Metrics

/// An outbound API client's two families: `tollgate_<api>_request_duration_seconds{call}` for every
/// HTTP exchange (answered or not) and `tollgate_<api>_errors_total{call, kind}` for every failed call.
struct OutboundAPIMetrics<Call: RawRepresentable & Sendable>: Sendable where Call.RawValue == String {
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
