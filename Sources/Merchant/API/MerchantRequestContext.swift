import Hummingbird
import HummingbirdAuth
import Logging
import Rejections
import ServiceHost

/// The request context of the routes `api.tokens` authenticates (entitlements, support, purchases,
/// `/v1/validate`, checkouts): the server's context with the caller `CredentialMiddleware` admitted.
/// Hummingbird makes it from the server's own for the group's routes only (`ChildRequestContext`).
public struct MerchantRequestContext: AuthRequestContext, ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The authenticated caller; nil only before `CredentialMiddleware` ran.
    public var identity: Caller?

    public init(context: BasicRequestContext) {
        coreContext = context.coreContext
        identity = nil
    }

    /// The caller the group's `CredentialMiddleware` admitted (it lets no request through without one).
    func caller() throws(Rejection) -> Caller {
        guard let identity else { throw APICredentials.unauthorized }
        return identity
    }
}

/// The one middleware that authenticates the merchant APIs (docs/security.md): the credential of the
/// request's one `Authorization: Bearer` header among `credentials`, within its rate, as the context's
/// caller; or, on `/v1/validate`, the validator key its URL carries (`apiKey`), which is all
/// cordova-plugin-purchase can send. Refusals are thrown, for the group's `RejectionMiddleware` to answer.
struct CredentialMiddleware: AuthenticatorMiddleware {
    typealias Context = MerchantRequestContext

    let credentials: APICredentials
    /// The keys a request may present as the URL's `apiKey` instead of a bearer token (`/v1/validate`).
    var urlKeys: APICredentials? = nil
    /// The 401 this group answers (`/v1/validate` names both ways in).
    var unauthorized = APICredentials.unauthorized

    func authenticate(request: Request, context: Context) async throws -> Caller? {
        let presented: Result<Caller, Rejection>
        if let urlKeys, let key = request.uri.queryParameters.get("apiKey") {
            // Two keys (one for each hop to read), as two Authorization headers: refused, not one picked.
            presented = request.uri.queryParameters.getAll("apiKey").count == 1
                ? urlKeys.caller(presenting: String(key), request: request, via: .urlKey)
                : .failure(APICredentials.unauthorized)
        } else {
            presented = credentials.authenticate(request)
        }
        switch presented {
        case .success(let caller): return caller
        case .failure(let refusal) where refusal.is(CredentialReason.unauthorized): throw unauthorized
        case .failure(let refusal): throw refusal
        }
    }
}

extension RejectionMiddleware where Context == MerchantRequestContext {
    /// A merchant API's refusals: counted in `tollgate_api_rejections_total{reason}`, answered
    /// `{"error","message"}` with the reason's status (or by `render`, `/v1/validate`'s Iaptic shape),
    /// logged at info with the route when `logger` is given.
    static func merchant(_ metrics: MerchantMetrics, logger: Logger? = nil, route: String = "",
                         render: @escaping @Sendable (Rejection, Request) -> Response = { rejection, _ in rejection.response() }) -> Self {
        RejectionMiddleware { rejection, request in
            metrics.apiRejected(reason: rejection.code)
            logger?.info("request refused", metadata: ["route": .string(route), "reason": .string(rejection.code),
                                                       "status": .stringConvertible(rejection.httpStatus), "detail": .string(rejection.message)])
            return render(rejection, request)
        }
    }
}

extension RouteGroup {
    /// A merchant API's routes: each sees the caller `credentials` authenticated, and every refusal
    /// (the middleware's or the handler's) is answered by `refusals`.
    static func merchant(_ routes: [Route<MerchantRequestContext>], credentials: CredentialMiddleware,
                         refusals: RejectionMiddleware<MerchantRequestContext>) -> RouteGroup {
        RouteGroup(context: MerchantRequestContext.self, middleware: [refusals, credentials], routes)
    }
}
