import HTTPTypes
import Hummingbird
import Rejections

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

    /// One route, declared once: its method, its path (Hummingbird's `:name` parameters) and its handler,
    /// which sees the group's request context.
    public struct Route<Context: RequestContext>: Sendable {
        public let method: HTTPRequest.Method
        public let path: String
        let handler: @Sendable (Request, Context) async throws -> Response

        public init(_ method: HTTPRequest.Method, _ path: String, _ handler: @escaping @Sendable (Request, Context) async throws -> Response) {
            self.method = method
            self.path = path
            self.handler = handler
        }
    }

    /// The group of `routes`: each registered on the router, and its method known to the server's 405s.
    public init(_ routes: [Route<BasicRequestContext>]) {
        self.init(methods: Self.methods(routes)) { router in
            for route in routes {
                router.on(RouterPath(route.path), method: route.method) { request, context in try await route.handler(request, context) }
            }
        }
    }

    /// The group of `routes` seeing a request context of their own (an authenticated caller), made from
    /// the server's by Hummingbird's `ChildRequestContext`, behind `middleware` in order (the first
    /// outermost): so authentication and the answer to a refusal are the group's, written once.
    public init<Context: ChildRequestContext>(context: Context.Type, middleware: [any MiddlewareProtocol<Request, Response, Context>],
                                              _ routes: [Route<Context>]) where Context.ParentContext == BasicRequestContext {
        self.init(methods: Self.methods(routes)) { router in
            let group = router.group(context: Context.self)
            for each in middleware { group.add(middleware: each) }
            for route in routes {
                group.on(RouterPath(route.path), method: route.method) { request, context in try await route.handler(request, context) }
            }
        }
    }

    private static func methods<Context>(_ routes: [Route<Context>]) -> [String: [HTTPRequest.Method]] {
        var methods: [String: [HTTPRequest.Method]] = [:]
        for route in routes { methods[route.path, default: []].append(route.method) }
        return methods
    }

    /// Several groups as one (their paths must differ).
    public static func combined(_ groups: [RouteGroup]) -> RouteGroup {
        RouteGroup(methods: groups.reduce(into: [:]) { all, group in all.merge(group.methods) { first, _ in first } }) { router in
            for group in groups { group.register(on: router) }
        }
    }

    public func register(on router: Router<BasicRequestContext>) { registration(router) }
}

/// Answers the `Rejection`s a route group's handlers and middleware throw, in one place: `answer`
/// counts (and logs) the refusal and makes its response, so the middleware outside the group (the
/// gateway's request metrics) sees an answer like any other.
public struct RejectionMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The refusal's answer; the request is there for a route whose client chose the answer's form.
    let answer: @Sendable (Rejection, Request) -> Response

    public init(answer: @escaping @Sendable (Rejection, Request) -> Response) { self.answer = answer }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let rejection as Rejection {
            return answer(rejection, request)
        }
    }
}
