import HTTPTypes
import Hummingbird
import Senders

/// Answers what the router alone would answer bare: 405 with `Allow` for a known path called with
/// the wrong method, and a JSON 404 for unknown paths; both counted as rejections.
struct ProtocolErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Path -> the methods it serves.
    let routes: [String: [HTTPRequest.Method]]
    /// The webhook routes, some of which also take one more segment (an account name), POST only.
    let webhooks: WebhookRoutes
    let metrics: GatewayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if let allowed = allowedMethods(path), !allowed.contains(request.method) {
            metrics.rejection(source: source(of: path), reason: RejectionReason.methodNotAllowed.rawValue)
            var headers = HTTPFields()
            headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            return ErrorBody.response(Rejection(.methodNotAllowed, "\(request.method.rawValue) is not allowed on \(path)"),
                                      extraHeaders: headers)
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            metrics.rejection(source: source(of: path), reason: RejectionReason.notFound.rawValue)
            return ErrorBody.response(Rejection(.notFound, "no route for \(path)"))
        }
    }

    private func allowedMethods(_ path: String) -> [HTTPRequest.Method]? {
        if let allowed = routes[path] { return allowed }
        guard let slash = path.lastIndex(of: "/"), path.index(after: slash) != path.endIndex,
              webhooks.accountPaths.contains(String(path[..<slash])) else { return nil }
        return [.post]
    }

    /// The sender a routed path belongs to, for the rejection metric's label.
    func source(of path: String) -> String { webhooks.sourceLabel(path: path) }
}
