import HTTPTypes
import Hummingbird
import Rejections

/// The one place a server answers what its router alone would answer bare: 405 with `Allow` for a
/// known path called with another method, and a JSON 404 for unknown paths, both reported through
/// `refused` (the gateway counts them in `tollgate_rejections_total`). Every server of every process
/// uses it, with the methods of every route it serves (`HealthRoutes.methods`, the webhooks, the
/// entitlement API's `RouteGroup`).
public struct ProtocolErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    private let routes: RouteMethods
    private let refused: @Sendable (_ path: String, _ reason: CommonReason) -> Void

    /// `methods`: path -> the methods it answers; a `:name` segment matches any one non-empty segment.
    public init(methods: [String: [HTTPRequest.Method]],
                refused: @escaping @Sendable (_ path: String, _ reason: CommonReason) -> Void = { _, _ in }) {
        routes = RouteMethods(methods)
        self.refused = refused
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if let allowed = routes.allowed(path), !allowed.contains(request.method) {
            refused(path, .methodNotAllowed)
            var headers = HTTPFields()
            headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            return Rejection(.methodNotAllowed, "\(request.method.rawValue) is not allowed on \(path)").response(extraHeaders: headers)
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            refused(path, .notFound)
            return Rejection(.notFound, "no route for \(path)").response()
        }
    }
}

/// Path templates and their methods: exact paths looked up directly, templates with `:name`
/// segments matched segment by segment.
struct RouteMethods: Sendable {
    private let exact: [String: [HTTPRequest.Method]]
    private let templates: [(segments: [Substring], methods: [HTTPRequest.Method])]

    init(_ methods: [String: [HTTPRequest.Method]]) {
        exact = methods.filter { !$0.key.contains(":") }
        templates = methods.filter { $0.key.contains(":") }.sorted { $0.key < $1.key }
            .map { ($0.key.split(separator: "/", omittingEmptySubsequences: false), $0.value) }
    }

    func allowed(_ path: String) -> [HTTPRequest.Method]? {
        if let methods = exact[path] { return methods }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return templates.first { template in
            template.segments.count == segments.count && zip(template.segments, segments).allSatisfy { pattern, segment in
                pattern.hasPrefix(":") ? !segment.isEmpty : pattern == segment
            }
        }?.methods
    }
}
