import Config
import Entitlements
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Rejections
import ServiceHost
import Store
import Toolkit
import Verifiers

/// The Sileo Payment Provider API of one vendor (docs/sileo.md), under its `basePath`: vendor info, the
/// sign-in hand-off to the merchant's page, user info, sign-out, package info, purchase (through
/// `CheckoutStarting`), download authorization and the single-use download route. Entitlements come from
/// the entitlement store, so a package is owned exactly while the store says its product is.
public struct SileoAPI: Sendable {
    let vendor: SileoVendor
    let credentials: SileoCredentials
    let store: EntitlementStore
    let checkouts: (any CheckoutStarting)?
    let metrics: MerchantMetrics
    let logger: Logger
    let now: @Sendable () -> Int64

    /// How long a sign-in nonce (and its browser cookie) waits for the merchant's page to come back.
    static let nonceTTLMs: Int64 = 600_000
    static let maxBodyBytes = 65_536
    static let cookieName = "tollgate_sileo_signin"

    public init(vendor: SileoVendor, store: EntitlementStore, checkouts: (any CheckoutStarting)?, metrics: MerchantMetrics = MerchantMetrics(),
                logger: Logger, now: @escaping @Sendable () -> Int64 = { Timestamp.now.millisecondsSince1970 }) {
        self.vendor = vendor
        self.credentials = SileoCredentials(store: store, vendor: vendor.settings.basePath)
        self.store = store
        self.checkouts = checkouts
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    var base: String { vendor.settings.basePath }

    /// The vendor's routes, for the server that carries them.
    public var routes: RouteGroup {
        let base = self.base
        return RouteGroup([
            .init(.get, base + "/info") { _, _ in info() },
            .init(.get, base + "/authenticate") { _, _ in await authenticate() },
            .init(.get, base + "/authenticate/complete") { request, _ in await completeSignIn(request) },
            .init(.post, base + "/user_info") { request, _ in await userInfo(request) },
            .init(.post, base + "/sign_out") { request, _ in await signOut(request) },
            .init(.post, base + "/package/:package/info") { request, context in
                await packageInfo(request, id: context.parameters.get("package") ?? "")
            },
            .init(.post, base + "/package/:package/purchase") { request, context in
                await purchase(request, id: context.parameters.get("package") ?? "")
            },
            .init(.post, base + "/package/:package/authorize_download") { request, context in
                await authorizeDownload(request, id: context.parameters.get("package") ?? "")
            },
            .init(.get, base + "/download/:package") { request, context in
                await download(request, id: context.parameters.get("package") ?? "", context: context)
            },
        ])
    }

    // MARK: Vendor info and sign-in

    func info() -> Response {
        struct Banner: Encodable { var message, button: String }
        struct Body: Encodable {
            var name, icon, description: String
            var authenticationBanner: Banner?
            enum CodingKeys: String, CodingKey { case name, icon, description, authenticationBanner = "authentication_banner" }
        }
        let s = vendor.settings
        return json(.ok, Body(name: s.name, icon: s.icon, description: s.description,
                              authenticationBanner: s.authenticationBanner.map { Banner(message: $0.message, button: $0.button) }))
    }

    /// The sign-in cookie's attributes: `Secure` unless the vendor's public URL is http on this machine
    /// (`http://127.0.0.1`, `localhost`: a browser would not send a `Secure` cookie back there).
    var cookieAttributes: String { Self.cookieAttributes(publicBaseURL: vendor.settings.publicBaseURL) }

    static func cookieAttributes(publicBaseURL: String) -> String {
        ConfigReader.isLoopbackHTTP(publicBaseURL) ? "HttpOnly; SameSite=Lax" : "HttpOnly; Secure; SameSite=Lax"
    }

    /// Hands the browser to the merchant's sign-in page with a fresh nonce and the return URL; the nonce
    /// is bound to this browser by a cookie only the completion reads.
    func authenticate() async -> Response {
        let nonce = SileoCredentials.newSecret(), browser = SileoCredentials.newSecret(), nowMs = now()
        do {
            try await credentials.issueNonce(nonce, browserSecret: browser, expiresAtMs: nowMs + Self.nonceTTLMs, nowMs: nowMs)
        } catch {
            return storeFailed(error)
        }
        let returnURL = vendor.settings.publicBaseURL + base + "/authenticate/complete"
        let signIn = vendor.settings.signIn.url
        var headers = noStoreHeaders()
        headers[.location] = signIn + (signIn.contains("?") ? "&" : "?") + "nonce=" + nonce + "&return_url=" + PercentEncoding.encode(returnURL)
        headers[.setCookie] = "\(Self.cookieName)=\(browser); Path=\(base)/authenticate; Max-Age=\(Self.nonceTTLMs / 1000); \(cookieAttributes)"
        return Response(status: .found, headers: headers)
    }

    /// The merchant's page came back with its assertion: verified, its nonce taken, then a token and a
    /// payment secret are issued and handed to Sileo through its own callback URL.
    func completeSignIn(_ request: Request) async -> Response {
        let nowMs = now()
        guard let text = request.uri.queryParameters.get("assertion"), !text.isEmpty else {
            return refuse(Rejection(.invalidAssertion, "the query parameter assertion is required"))
        }
        let assertion: SileoAssertion
        do { assertion = try SileoAssertion.verify(text, key: vendor.assertionKey, nowMs: nowMs) } catch { return refuse(error) }
        let consumed: Bool
        do {
            consumed = try await credentials.consumeNonce(assertion.nonce, browserSecret: browserCookie(request), nowMs: nowMs)
        } catch {
            return storeFailed(error)
        }
        guard consumed else {
            return refuse(Rejection(.invalidNonce, "the assertion's nonce was not issued to this browser, was used already or has expired: sign in again"))
        }
        let token = SileoCredentials.newSecret(), paymentSecret = SileoCredentials.newSecret()
        let expiresAtMs = nowMs + Int64(vendor.settings.tokenTtlDays) * 86_400_000
        do {
            try await credentials.issueToken(token, paymentSecret: paymentSecret, user: assertion.user, name: assertion.name,
                                             email: assertion.email, expiresAtMs: expiresAtMs, nowMs: nowMs)
        } catch {
            return storeFailed(error)
        }
        logger.info("sileo sign-in", metadata: ["vendor": .string(base)])
        var headers = noStoreHeaders()
        // The one place the token travels in a URL: Sileo's own callback, which only the device opens.
        headers[.location] = "sileo://authentication_success?token=BEARER%20\(token)&payment_secret=\(paymentSecret)"
        headers[.setCookie] = "\(Self.cookieName)=; Path=\(base)/authenticate; Max-Age=0; \(cookieAttributes)"
        return Response(status: .found, headers: headers)
    }

    // MARK: Signed-in calls

    func userInfo(_ request: Request) async -> Response {
        let holder: SileoCredentials.Holder
        switch await signedIn(request) {
        case .success(let found): holder = found
        case .failure(let refusal): return refusal.response
        }
        let owned: Set<String>
        do { owned = try await ownedProducts(holder.user) } catch { return storeFailed(error) }
        struct User: Encodable { var name: String?; var email: String? }
        struct Body: Encodable { var items: [String]; var user: User }
        let items = vendor.settings.packages.filter { owned.contains($0.product) }.map(\.id)
        return json(.ok, Body(items: items, user: User(name: holder.name, email: holder.email)))
    }

    func signOut(_ request: Request) async -> Response {
        let holder: SileoCredentials.Holder
        switch await signedIn(request) {
        case .success(let found): holder = found
        case .failure(let refusal): return refusal.response
        }
        do { try await credentials.revoke(holder) } catch { return storeFailed(error) }
        struct Body: Encodable { var success: Bool }
        return json(.ok, Body(success: true))
    }

    func packageInfo(_ request: Request, id: String) async -> Response {
        let fields: [String: JSONValue]
        switch await body(request) {
        case .success(let found): fields = found
        case .failure(let refusal): return refusal.response
        }
        guard let package = vendor.package(id) else { return unknownPackage(extra: .init(available: false)) }
        var purchased = false
        // The token is optional here: without one the price is shown to a signed-out user.
        if fields["token"] != nil {
            let holder: SileoCredentials.Holder
            switch await tokenHolder(fields) {
            case .success(let found): holder = found
            case .failure(let refusal): return refusal.response
            }
            do { purchased = try await ownedProducts(holder.user).contains(package.product) } catch { return storeFailed(error) }
        }
        struct Body: Encodable {
            var price: String
            var purchased: Bool
            var available: Bool
            var error: String?
            var recoveryURL: String?
            enum CodingKeys: String, CodingKey { case price, purchased, available, error, recoveryURL = "recovery_url" }
        }
        return json(.ok, Body(price: package.price, purchased: purchased, available: package.available,
                              error: package.available ? nil : "\(id) is not available now", recoveryURL: package.available ? nil : package.recoveryURL))
    }

    func purchase(_ request: Request, id: String) async -> Response {
        let failed = ErrorExtra(status: -1)
        let fields: [String: JSONValue]
        switch await body(request, extra: failed) {
        case .success(let found): fields = found
        case .failure(let refusal): return refusal.response
        }
        let holder: SileoCredentials.Holder
        switch await tokenHolder(fields, extra: failed) {
        case .success(let found): holder = found
        case .failure(let refusal): return refusal.response
        }
        guard let package = vendor.package(id) else { return unknownPackage(extra: failed) }
        // Checked before anything is decided: a stolen token without the device's secret buys nothing.
        guard let secret = fields["payment_secret"]?.string,
              ConstantTime.equals(SileoCredentials.hash(secret), holder.paymentSecretHash) else {
            return refuse(Rejection(.wrongPaymentSecret, "the payment secret does not match this sign-in: sign in again"), extra: failed)
        }
        do {
            if try await ownedProducts(holder.user).contains(package.product) {
                struct Owned: Encodable { var status: Int }
                return json(.ok, Owned(status: 0))
            }
        } catch {
            return storeFailed(error, extra: failed)
        }
        guard package.available else {
            return refuse(Rejection(.packageUnavailable, "\(id) is not for sale now"), recoveryURL: package.recoveryURL, extra: failed)
        }
        guard let checkouts else {
            return refuse(Rejection(.checkoutsUnavailable, "purchases are not available now"), extra: failed)
        }
        let settings = vendor.settings
        let intent = CheckoutIntent(app: settings.app, user: holder.user, product: package.product, amountMinor: package.amountMinor,
                                    currency: package.currency, provider: SourceName(settings.provider), environment: settings.environment)
        let started: StartedCheckout
        do {
            started = try await checkouts.start(intent)
        } catch {
            return refuse(error, extra: failed)
        }
        guard let url = started.paymentURL ?? settings.paymentPageURL.map({ Self.paymentPage($0, for: started) }) else {
            logger.error("sileo checkout has no payment page", metadata: ["vendor": .string(base), "checkout": .string(started.id)])
            return refuse(Rejection(.noPaymentPage, "this vendor's payment provider gives no payment page"), extra: failed)
        }
        struct Started: Encodable { var status: Int; var url: String }
        return json(.ok, Started(status: 1, url: url))
    }

    /// The merchant's payment page for a checkout its provider gives no page for (Citcon): with the
    /// checkout's `reference` and the `ipn` URL its order must carry.
    static func paymentPage(_ page: String, for started: StartedCheckout) -> String {
        var query = "reference=" + PercentEncoding.encode(started.reference)
        if let ipn = started.notifyURL { query += "&ipn=" + PercentEncoding.encode(ipn) }
        return page + (page.contains("?") ? "&" : "?") + query
    }

    func authorizeDownload(_ request: Request, id: String) async -> Response {
        let fields: [String: JSONValue]
        switch await body(request) {
        case .success(let found): fields = found
        case .failure(let refusal): return refusal.response
        }
        let holder: SileoCredentials.Holder
        switch await tokenHolder(fields) {
        case .success(let found): holder = found
        case .failure(let refusal): return refusal.response
        }
        guard let package = vendor.package(id) else { return unknownPackage(extra: .init()) }
        let nowMs = now()
        do {
            guard try await ownedProducts(holder.user, nowMs: nowMs).contains(package.product) else {
                return refuse(Rejection(.notEntitled, "\(id) is not purchased by this account"), recoveryURL: package.recoveryURL)
            }
            let key = SileoCredentials.newSecret()
            try await credentials.issueDownloadKey(key, user: holder.user, package: package.id,
                                                   expiresAtMs: nowMs + Int64(vendor.settings.downloadKeyTtlSeconds) * 1000, nowMs: nowMs)
            struct Body: Encodable { var url: String }
            // The key alone: neither the token nor anything about the user is in the URL.
            return json(.ok, Body(url: vendor.settings.publicBaseURL + base + "/download/" + package.id + "?key=" + key))
        } catch {
            return storeFailed(error)
        }
    }

    /// One download per key: the key is taken before anything else is decided.
    func download(_ request: Request, id: String, context: BasicRequestContext) async -> Response {
        guard let key = request.uri.queryParameters.get("key"), !key.isEmpty, key.utf8.count <= 128 else {
            return refuse(Rejection(.invalidDownloadKey, "the query parameter key is required"))
        }
        guard let package = vendor.package(id) else { return unknownPackage(extra: .init()) }
        let nowMs = now()
        let grant: SileoCredentials.DownloadGrant?
        do { grant = try await credentials.consumeDownloadKey(key, package: package.id, nowMs: nowMs) } catch { return storeFailed(error) }
        guard let grant else {
            return refuse(Rejection(.invalidDownloadKey, "this download link is unknown, used or expired: download again from Sileo"))
        }
        // A refund between authorization and download takes the download back too.
        do {
            guard try await ownedProducts(grant.user, nowMs: nowMs).contains(package.product) else {
                return refuse(Rejection(.notEntitled, "\(id) is no longer purchased by this account"), recoveryURL: package.recoveryURL)
            }
        } catch {
            return storeFailed(error)
        }
        if let url = package.downloadURL {
            // The merchant's server serves it only while the signature is valid: the key is single-use,
            // and the link it leads to expires as fast (`downloadKeyTtlSeconds`).
            guard let signer = vendor.downloadSignature else {
                return refuse(Rejection(.notFound, "\(id) has no download configured"))
            }
            metrics.sileoDownload(vendor: base, delivery: "redirect")
            var headers = noStoreHeaders()
            headers[.location] = signer.signedURL(url, expires: nowMs / 1000 + Int64(vendor.settings.downloadKeyTtlSeconds))
            return Response(status: .found, headers: headers)
        }
        guard let path = SileoVendor.filePath(of: package, in: vendor.settings) else {
            return refuse(Rejection(.notFound, "\(id) has no download configured"))
        }
        do {
            let body = try await FileIO().loadFile(path: path, context: context)
            metrics.sileoDownload(vendor: base, delivery: "file")
            var headers = noStoreHeaders()
            headers[.contentType] = "application/vnd.debian.binary-package"
            headers[.contentDisposition] = "attachment; filename=\"\(package.id).deb\""
            return Response(status: .ok, headers: headers, body: body)
        } catch {
            logger.error("sileo package file cannot be read", metadata: ["vendor": .string(base), "package": .string(package.id)])
            return refuse(Rejection(.notFound, "the package file cannot be read"))
        }
    }

    // MARK: Reading requests

    /// A refusal ready to send (counted when it was made).
    struct Refusal: Error {
        let response: Response
    }

    /// The JSON object the request carries (an empty body is an empty object).
    func body(_ request: Request, extra: ErrorExtra = .init()) async -> Result<[String: JSONValue], Refusal> {
        let bytes: [UInt8]
        do { bytes = try await RequestBodyReader.read(request, maxBytes: Self.maxBodyBytes) } catch {
            return .failure(Refusal(response: refuse(error, extra: extra)))
        }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .success([:]) }
        guard let object = JSONValue.parse(bytes)?.object else {
            return .failure(Refusal(response: refuse(Rejection(.malformedJSON, "the body is not a JSON object"), extra: extra)))
        }
        for key in ["token", "payment_secret"] where object[key] != nil && object[key]?.string == nil {
            return .failure(Refusal(response: refuse(Rejection(.invalidField, "\(key) must be a string"), extra: extra)))
        }
        return .success(object)
    }

    /// The signed-in user the body's token stands for.
    func signedIn(_ request: Request, extra: ErrorExtra = .init()) async -> Result<SileoCredentials.Holder, Refusal> {
        switch await body(request, extra: extra) {
        case .success(let fields): return await tokenHolder(fields, extra: extra)
        case .failure(let refusal): return .failure(refusal)
        }
    }

    func tokenHolder(_ fields: [String: JSONValue], extra: ErrorExtra = .init()) async -> Result<SileoCredentials.Holder, Refusal> {
        var invalid = extra
        invalid.invalidate = true
        guard let token = fields["token"]?.string.map(Self.bareToken), !token.isEmpty else {
            return .failure(Refusal(response: refuse(Rejection(.invalidSileoToken, "sign in to continue"), extra: invalid)))
        }
        do {
            guard let holder = try await credentials.holder(of: token, nowMs: now()) else {
                return .failure(Refusal(response: refuse(Rejection(.invalidSileoToken, "this sign-in is no longer valid: sign in again"),
                                                         extra: invalid)))
            }
            return .success(holder)
        } catch {
            return .failure(Refusal(response: storeFailed(error, extra: extra)))
        }
    }

    /// `BEARER <token>` as Sileo sends it (any case), or the bare token.
    static func bareToken(_ text: String) -> String {
        text.count > 7 && text.prefix(7).lowercased() == "bearer " ? String(text.dropFirst(7)) : text
    }

    func browserCookie(_ request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " }
                if trimmed.hasPrefix(Self.cookieName + "=") { return String(trimmed.dropFirst(Self.cookieName.count + 1)) }
            }
        }
        return nil
    }

    /// The products `user` is entitled to now in the vendor's app and environment.
    func ownedProducts(_ user: String, nowMs: Int64? = nil) async throws(StoreError) -> Set<String> {
        let at = nowMs ?? now()
        let found = try await store.entitlements(app: vendor.settings.app, user: user, environment: vendor.settings.environment.rawValue) ?? []
        return Set(found.filter { $0.isActive(atMs: at) }.map(\.product))
    }

    // MARK: Answers

    /// Fields the seed's error shape adds to a refusal: `status: -1` on purchases, `available: false` on
    /// package info, `invalidate: true` when Sileo should forget its credentials.
    struct ErrorExtra: Sendable {
        var status: Int?
        var available: Bool?
        var invalidate: Bool?
    }

    /// A refusal in the seed's error shape, with the reason code beside the message, counted by reason.
    func refuse(_ rejection: Rejection, recoveryURL: String? = nil, extra: ErrorExtra = .init()) -> Response {
        metrics.sileoRejected(vendor: base, reason: rejection.code)
        struct Body: Encodable {
            var error: String
            var reason: String
            var recoveryURL: String?
            var invalidate: Bool?
            var status: Int?
            var available: Bool?
            enum CodingKeys: String, CodingKey { case error, reason, recoveryURL = "recovery_url", invalidate, status, available }
        }
        return json(HTTPResponse.Status(code: rejection.httpStatus),
                    Body(error: rejection.message, reason: rejection.code, recoveryURL: recoveryURL,
                         invalidate: extra.invalidate, status: extra.status, available: extra.available), headers: rejection.headers)
    }

    func unknownPackage(extra: ErrorExtra) -> Response {
        refuse(Rejection(.unknownSileoPackage, "this repository sells no such package"), extra: extra)
    }

    func storeFailed(_ error: StoreError, extra: ErrorExtra = .init()) -> Response {
        logger.error("sileo store call failed", metadata: ["vendor": .string(base), "error": .string("\(error)")])
        return refuse(Rejection(.storeUnavailable, "the vendor cannot answer now: try again shortly", retryAfterSeconds: 5), extra: extra)
    }

    func noStoreHeaders() -> HTTPFields {
        var headers = HTTPFields()
        headers[.cacheControl] = "no-store"
        // The completion page must not pass its URL on to anything it loads.
        if let referrerPolicy = HTTPField.Name("Referrer-Policy") { headers[referrerPolicy] = "no-referrer" }
        return headers
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    func json(_ status: HTTPResponse.Status, _ value: some Encodable, headers: HTTPFields = [:]) -> Response {
        var all = headers
        if all[.cacheControl] == nil { all[.cacheControl] = "no-store" }
        all[.contentType] = "application/json"
        let data = (try? Self.encoder.encode(value)) ?? Data("{}".utf8)
        return Response(status: status, headers: all, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
