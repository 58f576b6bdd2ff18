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

/// Routes a component registers on a server it does not own (the entitlement API on the gateway's
/// server in `tollgate dev`), with the methods each answers, so that server's 405s know them.
public struct RouteGroup: Sendable {
    public let methods: [String: [HTTPRequest.Method]]
    private let registration: @Sendable (Router<BasicRequestContext>) -> Void

    public init(methods: [String: [HTTPRequest.Method]], register: @escaping @Sendable (Router<BasicRequestContext>) -> Void) {
        self.methods = methods
        registration = register
    }

    public static let none = RouteGroup(methods: [:]) { _ in }

    /// One route, declared once: its method, its path (Hummingbird's `:name` parameters) and its handler.
    public struct Route: Sendable {
        public let method: HTTPRequest.Method
        public let path: String
        let handler: @Sendable (Request, BasicRequestContext) async throws -> Response

        public init(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping @Sendable (Request, BasicRequestContext) async throws -> Response) {
            self.method = method
            self.path = path
            self.handler = handler
        }
    }

    /// The group of `routes`: each registered on the router, and its method known to the server's 405s.
    public init(_ routes: [Route]) {
        var methods: [String: [HTTPRequest.Method]] = [:]
        for route in routes { methods[route.path, default: []].append(route.method) }
        self.init(methods: methods) { router in
            for route in routes {
                router.on(RouterPath(route.path), method: route.method) { request, context in try await route.handler(request, context) }
            }
        }
    }

    /// Several groups as one (their paths must differ).
    public static func combined(_ groups: [RouteGroup]) -> RouteGroup {
        RouteGroup(methods: groups.reduce(into: [:]) { all, group in all.merge(group.methods) { first, _ in first } }) { router in
            for group in groups { group.register(on: router) }
        }
    }

    public func register(on router: Router<BasicRequestContext>) { registration(router) }
}
