import HTTPTypes
import Hummingbird
import Rejections
import ServiceHost

/// The request context of the console's routes: the server's context with the operator the session
/// cookie names (`SessionMiddleware`), nil on the sign-in page.
public struct ConsoleRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var signedIn: ConsoleOperator?

    public init(context: BasicRequestContext) {
        coreContext = context.coreContext
        signedIn = nil
    }

    /// The operator the group's `SessionMiddleware` admitted (it lets no request through without one).
    func signedInOperator() throws(Rejection) -> ConsoleOperator {
        guard let signedIn else { throw Rejection(ConsoleReason.signInRequired, "sign in to use the console") }
        return signedIn
    }
}

/// The one middleware that admits an operator to the console's pages: the session cookie checked by
/// `OperatorSessions`. A page asked without one is sent to the sign-in page; anything else is refused.
struct SessionMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext
    let keys: SessionKeys
    let signInPath: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let sessions = try await keys.sessions()
        do throws(Rejection) {
            guard let cookie = request.cookies[OperatorSessions.cookieName]?.value else {
                throw Rejection(ConsoleReason.signInRequired, "sign in to use the console")
            }
            context.signedIn = try sessions.session(cookie)
        } catch {
            guard request.method == .get || request.method == .head else { throw error }
            var headers = HTTPFields()
            headers[.location] = signInPath
            if error.is(ConsoleReason.sessionExpired) { headers[.setCookie] = sessions.clearCookie() }
            return Response(status: .seeOther, headers: headers)
        }
        return try await next(request, context)
    }
}

/// What every console answer carries: a Content-Security-Policy that runs no script and loads nothing
/// but the console's own stylesheet, no framing, no caching, no sniffing, no referrer.
struct ConsoleHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    static var policy: String {
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = Self.policy
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }
}
