import Metrics

/// `tollgate_play_api_request_duration_seconds{call}` for every HTTP exchange (answered or not) and
/// `tollgate_play_api_errors_total{call, kind}` for every failed call.
struct PlayAPIMetrics: Sendable {
    let factory: any MetricsFactory

    func requestDuration(_ call: PlayAPICall, _ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Metrics.Timer(label: "tollgate_play_api_request_duration_seconds", dimensions: [("call", call.rawValue)], factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func error(_ error: PlayAPIError) {
        Counter(label: "tollgate_play_api_errors_total", dimensions: [("call", error.call.rawValue), ("kind", error.kindLabel)],
                factory: factory).increment()
    }
}
