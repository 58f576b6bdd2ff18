import Config
import Events
import HTTPTypes
import Hummingbird
import Rejections
import Toolkit
import Verifiers

/// A merchant API's caller, as `CredentialMiddleware` puts it in the request context: the credential of
/// the request's one `Authorization` header (or, on `/v1/validate`, the validator key of its URL), and
/// the user token that names the user it may act for.
public struct Caller: Sendable {
    /// How the credential was presented.
    enum Presentation: Sendable { case bearer, urlKey }

    let credential: APIToken
    /// Its place in the credentials that admitted it (its buckets').
    let index: Int
    /// The `Tollgate-User-Token` header as sent; verified per app by `APICredentials.authorize`.
    let userToken: String?
    let presented: Presentation

    var isServer: Bool { credential.kind == .server }
}

/// How every merchant API authenticates (docs/security.md): the credentials of `api.tokens` (and the
/// validator keys of `purchases.validatorKeys`, client credentials of one app), compared in constant
/// time; each credential's own request rate; and, for client credentials, the user token that names
/// the one user they act for.
public struct APICredentials: Sendable {
    static let userTokenHeader = HTTPField.Name("Tollgate-User-Token")!

    let tokens: [APIToken]
    /// One bucket per credential, in `tokens`' order: one customer's flood does not spend another's rate.
    private let limiters: [RateLimiter]
    /// Per client credential, the requests that make the store's API calls (a receipt, a transaction id,
    /// a Play token): the merchant's App Store and Play quotas also serve acknowledgements, enrichment and
    /// reconciliation, which a public credential must not be able to starve.
    private let storeCallLimiters: [RateLimiter]
    let userTokenKeys: [String: PublicKey]
    let ratePerSecond: Int
    let rateBurst: Int
    let clientStoreCallsPerSecond: Int
    let clientStoreCallBurst: Int
    let now: @Sendable () -> Int64

    public init(tokens: [APIToken], userTokenKeys: [String: PublicKey] = [:], ratePerSecond: Int = 500, rateBurst: Int = 1_000,
         clientStoreCallsPerSecond: Int = 50, clientStoreCallBurst: Int = 200,
         now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        // An operator credential signs in to the console only: here it is no credential at all.
        let tokens = tokens.filter { $0.kind != .operator }
        self.tokens = tokens
        self.userTokenKeys = userTokenKeys
        self.ratePerSecond = ratePerSecond
        self.rateBurst = rateBurst
        self.now = now
        limiters = tokens.map { RateLimiter(perSecond: Double($0.ratePerSecond ?? ratePerSecond), burst: $0.rateBurst ?? rateBurst) }
        storeCallLimiters = tokens.map { _ in RateLimiter(perSecond: Double(clientStoreCallsPerSecond), burst: clientStoreCallBurst) }
        self.clientStoreCallsPerSecond = clientStoreCallsPerSecond
        self.clientStoreCallBurst = clientStoreCallBurst
    }

    /// The configured credential the request's one `Authorization: Bearer` header carries (with two, a
    /// proxy and this check could each read a different one), within its rate.
    func authenticate(_ request: Request) -> Result<Caller, Rejection> {
        let credentials = request.headers[values: .authorization]
        guard credentials.count == 1, let header = credentials.first, header.count > 7, header.prefix(7).lowercased() == "bearer " else {
            return .failure(Self.unauthorized)
        }
        return caller(presenting: String(header.dropFirst(7)), request: request, via: .bearer)
    }

    /// The caller presenting `secret` (a bearer token or a validator key).
    func caller(presenting secret: String, request: Request, via presented: Caller.Presentation) -> Result<Caller, Rejection> {
        guard let index = ConstantTime.firstMatch(secret, in: tokens.map(\.token)) else { return .failure(Self.unauthorized) }
        if let seconds = limiters[index].take() {
            return .failure(Rejection(.rateLimited, "this credential sends more requests than its rate allows (api.ratePerSecond)",
                                      retryAfterSeconds: seconds))
        }
        // Two tokens could each be read by a different hop: one or none.
        let userTokens = request.headers[values: Self.userTokenHeader]
        guard userTokens.count <= 1 else {
            return .failure(Rejection(.invalidUserToken, "send at most one Tollgate-User-Token header"))
        }
        return .success(Caller(credential: tokens[index], index: index, userToken: userTokens.first, presented: presented))
    }

    /// Whether `caller` may act in `app` for `user`: a server credential for any user of its apps; a
    /// client credential only for the user its user token names (`requireUser`), or, where the claim
    /// itself proves possession and no token is sent (`/v1/validate`), for the user the request names.
    func authorize(_ caller: Caller, app: String, user: String?, userTokenOptional: Bool = false) throws(Rejection) {
        guard caller.credential.allows(app: app) else {
            throw Rejection(.appNotAllowed, "this credential is limited to other apps (api.tokens)")
        }
        guard !caller.isServer, let user else { return }
        guard let text = caller.userToken else {
            if userTokenOptional { return }
            throw Rejection(.userTokenRequired,
                            "a client credential acts for a user only with that user's token in Tollgate-User-Token (docs/security.md)")
        }
        guard let key = userTokenKeys[app] else {
            throw Rejection(.invalidUserToken, "no user token key is configured for \(app) (api.userTokenKeys)")
        }
        let token = try UserToken.verify(text, app: app, key: key, nowMs: now())
        guard token.user.isExactly(user) else {
            throw Rejection(.userNotAllowed, "the user token names another user than the request")
        }
    }

    /// Takes one of a client credential's store calls (server credentials have none to take): nil when
    /// admitted, else the 429 that says when to ask again.
    func takeStoreCall(_ caller: Caller) throws(Rejection) {
        guard !caller.isServer, let seconds = storeCallLimiters[caller.index].take() else { return }
        throw Rejection(.rateLimited, "this credential asks the stores more often than api.clientStoreCallsPerSecond allows",
                        retryAfterSeconds: seconds)
    }

    static let unauthorized = Rejection(.unauthorized, "a valid bearer token from api.tokens is required", challenge: "Bearer")
}
