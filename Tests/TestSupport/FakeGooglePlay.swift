import Foundation
import Toolkit

/// Google's side of the Play Developer API, on a loopback port: the OAuth token endpoint, which
/// checks the service account's JWT as Google does (form, RS256 signature, claims, `iat` near its
/// clock), and the purchase endpoints, which take only a bearer token it issued and that has not
/// expired on its clock, and answer with the purchases or replies the test set. It acknowledges as
/// Google does: the purchase at the call's own kind and product only, and only once it is paid.
public final class FakeGooglePlay: @unchecked Sendable {
    public enum Scripted: Sendable {
        case reply(LoopbackHTTPServer.Reply)
        /// Accept the request and never answer.
        case hang
    }

    public static let scope = "https://www.googleapis.com/auth/androidpublisher"

    private let server: LoopbackHTTPServer
    private let state: State

    public var baseURL: String { server.baseURL }
    public var tokenURL: String { server.baseURL + "/token" }

    /// - Parameter now: Google's clock (the client's test clock, so moving it ages the tokens too).
    public init(publicKey: PublicKey, clientEmail: String, keyId: String, now: @escaping @Sendable () -> Date = { Date() }) {
        let state = State(publicKey: publicKey, clientEmail: clientEmail, keyId: keyId, now: now)
        server = LoopbackHTTPServer { [state] request in state.handle(request) }
        self.state = state
        state.locked { $0.tokenURL = server.baseURL + "/token" }
    }

    public func stop() { server.stop() }

    /// The purchase answered at `path` (the request target as the client must send it).
    public func store(_ json: String, at path: String) { state.locked { $0.purchases[path] = json } }
    /// The package's voided purchases, as `purchases.voidedpurchases.list` answers them: each a
    /// `VoidedPurchase` JSON object with `purchaseToken` and `voidedTimeMillis`.
    public func storeVoided(_ purchases: [String]) { state.locked { $0.voided = purchases } }
    /// One `VoidedPurchase` as `purchases.voidedpurchases.list` answers it: bought a day before its void.
    public static func voidedPurchase(_ token: String, atMs: Int64) -> String {
        #"{"kind": "androidpublisher#voidedPurchase", "purchaseToken": "\#(token)", "purchaseTimeMillis": "\#(atMs - 86_400_000)", "voidedTimeMillis": "\#(atMs)", "orderId": "GPA.3399-\#(token)", "voidedSource": 0, "voidedReason": 1, "refundType": 1}"#
    }
    /// Voided purchases per page (Google's `maxResults`, at most 1000).
    public func setVoidedPageSize(_ size: Int) { state.locked { $0.voidedPageSize = size } }
    /// Answers for the next requests to `path`, before the stored purchase.
    public func script(_ path: String, _ replies: Scripted...) { state.locked { $0.scripted[path, default: []] += replies } }
    /// Answers for the next token requests, instead of checking and issuing.
    public func scriptToken(_ replies: Scripted...) { state.locked { $0.tokenScript += replies } }
    public func setTokenLifetime(_ seconds: Int) { state.locked { $0.lifetime = seconds } }
    /// How long the token endpoint thinks before answering (on its own thread).
    public func setTokenDelay(_ seconds: TimeInterval) { state.locked { $0.tokenDelay = seconds } }
    /// Makes every token issued so far invalid, as if revoked.
    public func revokeTokens() { state.locked { $0.valid.removeAll() } }
    /// Every call's request target, acknowledgements included (`...:acknowledge`).
    public var acknowledgeCalls: [String] { state.locked { $0.apiTargets.filter { $0.hasSuffix(":acknowledge") } } }

    public var tokenRequests: Int { state.locked { $0.tokenRequests } }
    public var issuedTokens: [String] { state.locked { $0.issued } }
    public var apiTargets: [String] { state.locked { $0.apiTargets } }
    /// The purchase paths acknowledged (`...:acknowledge` without the suffix), in order.
    public var acknowledged: [String] { state.locked { $0.acknowledged } }
    /// Every `orders.reviewrefund` answer taken: the order's path and the request body, in order.
    public var reviewRefunds: [(order: String, body: String)] { state.locked { $0.reviewRefunds } }
    /// Why JWTs were refused; empty when every assertion was as Google wants it.
    public var jwtProblems: [String] { state.locked { $0.jwtProblems } }
    /// The `iat` of every accepted assertion.
    public var issuedAts: [Int64] { state.locked { $0.issuedAts } }

    private final class State: @unchecked Sendable {
        struct Values {
            var tokenURL = ""
            var lifetime = 3600
            var tokenDelay: TimeInterval = 0
            /// Issued tokens and when each expires (Google's clock, seconds).
            var valid: [String: TimeInterval] = [:]
            var issued: [String] = []
            var tokenRequests = 0
            public var issuedAts: [Int64] = []
            public var jwtProblems: [String] = []
            public var apiTargets: [String] = []
            public var acknowledged: [String] = []
            var reviewRefunds: [(order: String, body: String)] = []
            var purchases: [String: String] = [:]
            var scripted: [String: [Scripted]] = [:]
            var tokenScript: [Scripted] = []
            var voided: [String] = []
            var voidedPageSize = 1000
        }

        let publicKey: PublicKey
        let clientEmail: String
        let keyId: String
        let now: @Sendable () -> Date
        private let lock = NSLock()
        private var values = Values()

        public init(publicKey: PublicKey, clientEmail: String, keyId: String, now: @escaping @Sendable () -> Date) {
            self.publicKey = publicKey
            self.clientEmail = clientEmail
            self.keyId = keyId
            self.now = now
        }

        func locked<T>(_ body: (inout Values) -> T) -> T { lock.withLock { body(&values) } }

        func handle(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply? {
            request.target == "/token" ? token(request) : api(request)
        }

        private func token(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply? {
            let (scripted, delay, tokenURL) = locked { v -> (Scripted?, TimeInterval, String) in
                v.tokenRequests += 1
                return (v.tokenScript.isEmpty ? nil : v.tokenScript.removeFirst(), v.tokenDelay, v.tokenURL)
            }
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            switch scripted {
            case .reply(let reply)?: return reply
            case .hang?: return nil
            case nil: break
            }
            let claims: JSONValue
            switch check(request, audience: tokenURL) {
            case .success(let accepted): claims = accepted
            case .failure(let problem):
                locked { $0.jwtProblems.append(problem.reason) }
                if problem.reason.hasPrefix("iat ") {
                    return .json(400, #"{"error": "invalid_grant", "error_description": "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."}"#)
                }
                return .json(400, #"{"error": "invalid_grant", "error_description": "Invalid JWT Signature."}"#)
            }
            let nowSeconds = now().timeIntervalSince1970
            let (token, lifetime) = locked { v -> (String, Int) in
                let token = "ya29.fake-access-token-\(v.issued.count + 1)"
                v.issued.append(token)
                v.valid[token] = nowSeconds + TimeInterval(v.lifetime)
                v.issuedAts.append(claims["iat"]?.int64 ?? 0)
                return (token, v.lifetime)
            }
            return .json(200, #"{"access_token": "\#(token)", "expires_in": \#(lifetime), "token_type": "Bearer"}"#)
        }

        struct Problem: Error { var reason: String }

        /// The checks Google's token endpoint makes of a JWT bearer grant; the claims when all pass.
        private func check(_ request: LoopbackHTTPServer.Request, audience: String) -> Result<JSONValue, Problem> {
            guard request.method == "POST" else { return .failure(Problem(reason: "method \(request.method)")) }
            guard request.header("Content-Type")?.hasPrefix("application/x-www-form-urlencoded") == true else {
                return .failure(Problem(reason: "content type \(request.header("Content-Type") ?? "none")"))
            }
            let form = Self.form(request.body)
            guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
                return .failure(Problem(reason: "grant_type \(form["grant_type"] ?? "none")"))
            }
            guard let assertion = form["assertion"], let jws = try? CompactJWS(assertion), let header = try? jws.header() else {
                return .failure(Problem(reason: "assertion is not a compact JWS"))
            }
            guard header["alg"]?.string == "RS256", header["typ"]?.string == "JWT", header["kid"]?.string == keyId else {
                return .failure(Problem(reason: "header \(header.canonical)"))
            }
            guard publicKey.verifyRSASHA256(message: Array(jws.signingInput), signature: jws.signature) else {
                return .failure(Problem(reason: "signature"))
            }
            guard let claims = JSONValue.parse(jws.payload), let iat = claims["iat"]?.int64, let exp = claims["exp"]?.int64 else {
                return .failure(Problem(reason: "claims are not JSON with iat and exp"))
            }
            guard claims["iss"]?.string == clientEmail, claims["scope"]?.string == FakeGooglePlay.scope,
                  claims["aud"]?.string == audience, exp > iat, exp - iat <= 3600 else {
                return .failure(Problem(reason: "claims \(claims.canonical)"))
            }
            // Google's clock: an assertion made too long ago, or in its future, is refused.
            let skew = Double(iat) - now().timeIntervalSince1970
            guard abs(skew) <= 300 else { return .failure(Problem(reason: "iat \(Int(skew)) s from Google's clock")) }
            return .success(claims)
        }

        private func api(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply? {
            let authorization = request.header("Authorization") ?? ""
            let nowSeconds = now().timeIntervalSince1970
            let (authorized, scripted, stored) = locked { v -> (Bool, Scripted?, String?) in
                v.apiTargets.append(request.target)
                let token = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
                guard let expiresAt = v.valid[token], nowSeconds < expiresAt else { return (false, nil, nil) }
                let next = v.scripted[request.target]?.isEmpty == false ? v.scripted[request.target]?.removeFirst() : nil
                return (true, next, v.purchases[request.target])
            }
            let acknowledging = request.method == "POST" && request.target.hasSuffix(":acknowledge")
            let reviewing = request.method == "POST" && request.target.hasSuffix(":reviewrefund")
            guard request.method == "GET" || acknowledging || reviewing, authorized else {
                return .json(401, #"{"error": {"code": 401, "message": "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.", "status": "UNAUTHENTICATED"}}"#)
            }
            switch scripted {
            case .reply(let reply)?: return reply
            case .hang?: return nil
            case nil: break
            }
            if reviewing {
                // `orders.reviewrefund`: the three required fields, a preference Google knows; then 200 with an empty body
                // (Google records the first answer and takes later ones the same way).
                let body = JSONValue.parse(request.body)
                let preference = body?["refundPreference"]?.string ?? ""
                guard body?["pendingRefundToken"]?.string?.isEmpty == false, body?["sampleContentProvided"]?.bool != nil,
                      ["DECLINE", "APPROVE", "NEUTRAL"].contains(preference) else {
                    return .json(400, #"{"error": {"code": 400, "message": "Request contains an invalid argument.", "status": "INVALID_ARGUMENT"}}"#)
                }
                let order = String(request.target.dropLast(":reviewrefund".count))
                locked { $0.reviewRefunds.append((order, String(decoding: request.body, as: UTF8.self))) }
                return LoopbackHTTPServer.Reply(status: 200, body: [])
            }
            if acknowledging {
                let purchasePath = String(request.target.dropLast(":acknowledge".count))
                guard JSONValue.parse(request.body)?.object != nil else {
                    return .json(400, #"{"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}"#)
                }
                return acknowledge(purchasePath)
            }
            let (path, query) = Self.split(request.target)
            if path.hasSuffix("/purchases/voidedpurchases") { return voidedList(query) }
            guard let stored else {
                return .json(404, #"{"error": {"code": 404, "message": "The purchase token was not found.", "status": "NOT_FOUND"}}"#)
            }
            return .json(200, stored)
        }

        /// `purchases.products.acknowledge` and `purchases.subscriptions.acknowledge`: the purchase stored
        /// for the call's own kind (a subscription at its v2 path, whatever the subscription id, which
        /// Google no longer requires), 400 for a token of another kind or product, 400 for a purchase not
        /// paid (a pending subscription, a canceled or pending product), 404 for a token Google never
        /// issued; then 200 with an empty body, and the purchase answers acknowledged from now on.
        private func acknowledge(_ purchasePath: String) -> LoopbackHTTPServer.Reply {
            let parts = purchasePath.components(separatedBy: "/purchases/")
            let tokenPart = purchasePath.components(separatedBy: "/tokens/")
            guard parts.count == 2, tokenPart.count == 2, !tokenPart[1].isEmpty, !tokenPart[1].contains("/") else {
                return Self.notFound
            }
            let token = tokenPart[1]
            let stored: String
            if parts[1].hasPrefix("subscriptions/") {
                stored = parts[0] + "/purchases/subscriptionsv2/tokens/" + token
            } else if parts[1].hasPrefix("products/") {
                // A one-time purchase is kept where productsv2 reads it; the product must be one of its line items.
                let productId = String(parts[1].dropFirst("products/".count).prefix { $0 != "/" })
                stored = parts[0] + "/purchases/productsv2/tokens/" + token
                let holds = locked { v in
                    v.purchases[stored].map { JSONValue.parse(Array($0.utf8))?["productLineItem"]?.array?.contains { $0["productId"]?.string == productId } == true }
                }
                if holds == false { return Self.tokenDoesNotMatchProduct }
            } else {
                return Self.notFound
            }
            return locked { v in
                guard let json = v.purchases[stored] else {
                    let elsewhere = v.purchases.keys.contains { $0.hasSuffix("/tokens/" + token) }
                    return elsewhere ? Self.tokenDoesNotMatchProduct : Self.notFound
                }
                let purchase = JSONValue.parse(Array(json.utf8))
                let productState = purchase?["purchaseStateContext"]?["purchaseState"]?.string
                let unpaid = purchase?["subscriptionState"]?.string == "SUBSCRIPTION_STATE_PENDING"
                    || (productState != nil && productState != "PURCHASED")
                guard !unpaid else { return Self.invalidPurchaseState }
                v.acknowledged.append(purchasePath)
                v.purchases[stored] = Self.markedAcknowledged(json)
                return LoopbackHTTPServer.Reply(status: 200, body: [])
            }
        }

        static let notFound = LoopbackHTTPServer.Reply.json(404, #"{"error": {"code": 404, "message": "The purchase token was not found.", "errors": [{"message": "The purchase token was not found.", "domain": "androidpublisher", "reason": "purchaseTokenNotFound", "location": "token", "locationType": "parameter"}], "status": "NOT_FOUND"}}"#)
        static let tokenDoesNotMatchProduct = LoopbackHTTPServer.Reply.json(400, #"{"error": {"code": 400, "message": "The purchase token does not match the product ID.", "errors": [{"message": "The purchase token does not match the product ID.", "domain": "androidpublisher", "reason": "purchaseTokenDoesNotMatchProductId", "location": "token", "locationType": "parameter"}], "status": "INVALID_ARGUMENT"}}"#)
        static let invalidPurchaseState = LoopbackHTTPServer.Reply.json(400, #"{"error": {"code": 400, "message": "The purchase is not in a valid state to perform the desired operation.", "errors": [{"message": "The purchase is not in a valid state to perform the desired operation.", "domain": "androidpublisher", "reason": "invalidPurchaseState", "location": "token", "locationType": "parameter"}], "status": "INVALID_ARGUMENT"}}"#)

        /// `purchases.voidedpurchases.list`: the voids at or after `startTime` (milliseconds, required),
        /// oldest first, `maxResults` per page, continued with the `token` of `tokenPagination.nextPageToken`.
        private func voidedList(_ query: [String: String]) -> LoopbackHTTPServer.Reply {
            guard let startTime = query["startTime"].flatMap(Int64.init) else {
                return .json(400, #"{"error": {"code": 400, "message": "startTime is required.", "status": "INVALID_ARGUMENT"}}"#)
            }
            let (all, pageSize) = locked { ($0.voided, $0.voidedPageSize) }
            let due = all.filter { (JSONValue.parse(Array($0.utf8))?["voidedTimeMillis"]?.string).flatMap(Int64.init) ?? 0 >= startTime }
            let size = min(pageSize, query["maxResults"].flatMap(Int.init) ?? 1000)
            let first = query["token"].flatMap { Int($0.dropFirst("page-".count)) } ?? 0
            let page = Array(due.dropFirst(first).prefix(size))
            var fields = [#""pageInfo": {"totalResults": \#(due.count), "resultPerPage": \#(size), "startIndex": \#(first)}"#]
            if first + size < due.count { fields.append(#""tokenPagination": {"nextPageToken": "page-\#(first + size)"}"#) }
            if !page.isEmpty { fields.append(#""voidedPurchases": [\#(page.joined(separator: ", "))]"#) }
            return .json(200, "{" + fields.joined(separator: ", ") + "}")
        }

        /// A stored purchase's JSON with its acknowledgement state set.
        static func markedAcknowledged(_ json: String) -> String {
            json.replacingOccurrences(of: #""acknowledgementState"\s*:\s*"ACKNOWLEDGEMENT_STATE_PENDING""#,
                                      with: #""acknowledgementState":"ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED""#, options: .regularExpression)
        }

        private static func split(_ target: String) -> (path: String, query: [String: String]) {
            let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? form(Array(parts[1].utf8)) : [:])
        }

        private static func form(_ body: [UInt8]) -> [String: String] {
            var values: [String: String] = [:]
            for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let decode = { (text: Substring) in text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
                values[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
            }
            return values
        }
    }
}
