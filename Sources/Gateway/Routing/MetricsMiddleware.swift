import Hummingbird

/// Counts every request and records its latency by route template (never the raw path, so an
/// attacker probing random URLs cannot blow up label cardinality).
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: GatewayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response = try await next(request, context)
        // Unrouted requests (404, 405) share one label whatever their path.
        let route = response.status == .notFound || response.status == .methodNotAllowed
            ? "unmatched" : context.endpointPath ?? "unmatched"
        metrics.request(route: route, status: response.status.code, duration: ContinuousClock.now - started)
        return response
    }
}
