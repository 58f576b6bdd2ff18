import Logging
import Senders
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
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let response = try await fetcher.fetch(request)
            metrics.requestDuration(call, clock.now - start)
            return response
        } catch {
            let elapsed = clock.now - start
            metrics.requestDuration(call, elapsed)
            // The fetcher reports only text; having waited the whole deadline is what makes it a timeout.
            if elapsed >= timeout {
                throw failure(call, .timeout, "no answer within \(Self.milliseconds(timeout)) ms")
            }
            throw failure(call, .network, error.description)
        }
    }

    /// Every `PlayAPIError` is made here, so each is counted and logged exactly once.
    func failure(_ call: PlayAPICall, _ kind: PlayAPIError.Kind, _ message: String) -> PlayAPIError {
        let error = PlayAPIError(call: call, kind: kind, message: message)
        metrics.error(error)
        logger.warning("Play API call failed", metadata: [
            "call": .string(call.rawValue), "kind": .string(error.kindLabel),
            "transient": .stringConvertible(error.isTransient), "error": .string(message)])
        return error
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
