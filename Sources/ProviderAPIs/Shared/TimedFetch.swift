import Toolkit

/// Why an outbound API exchange got no HTTP answer.
enum TimedFetchFailure: Error {
    /// The whole deadline passed: the fetcher reports only text, so the elapsed time decides.
    case timeout
    case network(String)
}

extension HTTPFetcher {
    /// One exchange of an outbound API client (Play, App Store), timed for its metrics whatever the outcome.
    func timedFetch(_ request: HTTPFetchRequest) async -> (outcome: Result<HTTPFetchResponse, TimedFetchFailure>, elapsed: Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        do {
            let response = try await fetch(request)
            return (.success(response), clock.now - start)
        } catch {
            let elapsed = clock.now - start
            return (.failure(elapsed >= request.timeout ? .timeout : .network(error.description)), elapsed)
        }
    }
}

extension Duration {
    /// Whole milliseconds, for messages.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
