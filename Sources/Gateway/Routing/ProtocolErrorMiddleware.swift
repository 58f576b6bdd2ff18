import Events
import HTTPTypes
import Hummingbird
import Verifiers

/// Answers what the router alone would answer bare: 405 with `Allow` for a known path called with
/// the wrong method, and a JSON 404 for unknown paths; both counted as rejections.
struct ProtocolErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Path -> the methods it serves.
    let routes: [String: [HTTPRequest.Method]]
    let metrics: GatewayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if let allowed = routes[path], !allowed.contains(request.method) {
            metrics.rejection(source: Self.source(of: path), reason: RejectionReason.methodNotAllowed.rawValue)
            var headers = HTTPFields()
            headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            return ErrorBody.response(Rejection(.methodNotAllowed, "\(request.method.rawValue) is not allowed on \(path)"),
                                      extraHeaders: headers)
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            metrics.rejection(source: Self.source(of: path), reason: RejectionReason.notFound.rawValue)
            return ErrorBody.response(Rejection(.notFound, "no route for \(path)"))
        }
    }

    /// The sender a path belongs to, for the rejection metric's label.
    static func source(of path: String) -> String {
        let prefix = "/webhooks/"
        guard path.hasPrefix(prefix) else { return "none" }
        let name = path.dropFirst(prefix.count)
        return SourceName(rawValue: String(name)) == nil ? "none" : String(name)
    }
}
