import Logging
import Toolkit

/// The HTTP side shared by the token provider and the API calls: each exchange timed against the
/// deadline, and every error made (so counted and logged) in one place.
struct PlayTransport: Sendable {
    let fetcher: any HTTPFetcher
    let timeout: Duration
    let logger: Logger
    let metrics: PlayAPIMetrics

    /// One HTTP exchange; no answer becomes a network or timeout error.
    func exchange(_ call: PlayAPICall, _ request: HTTPFetchRequest) async throws(PlayAPIError) -> HTTPFetchResponse {
        let (outcome, elapsed) = await fetcher.timedFetch(request)
        metrics.requestDuration(call, elapsed)
        switch outcome {
        case .success(let response): return response
        case .failure(.timeout): throw failure(call, .timeout, "no answer within \(timeout.wholeMilliseconds) ms")
        case .failure(.network(let message)): throw failure(call, .network, message)
        }
    }

    /// Every `PlayAPIError` is made here, so each is counted and logged exactly once.
    func failure(_ call: PlayAPICall, _ kind: PlayAPIError.Kind, _ message: String, retryAfterSeconds: Int? = nil) -> PlayAPIError {
        let error = PlayAPIError(call: call, kind: kind, message: message, retryAfterSeconds: retryAfterSeconds)
        metrics.error(error.call, kind: error.kindLabel)
        logger.warning("Play API call failed", metadata: [
            "call": .string(call.rawValue), "kind": .string(error.kindLabel),
            "transient": .stringConvertible(error.isTransient), "error": .string(message)])
        return error
    }
}
