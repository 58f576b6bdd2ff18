import Foundation
import Toolkit

/// Apple's App Store Server API on a loopback port: it checks each request's JWT as Apple documents
/// ("Generating JSON Web Tokens for API requests": ES256 with the In-App Purchase key, `kid`, `typ`,
/// `iss`, `aud` appstoreconnect-v1, `bid`, `exp` at most an hour after `iat`, not expired on its clock,
/// not issued in its future) and answers 401 with no body otherwise, as Apple does; then answers what the test stored or scripted for the request target,
/// else 404 with Apple's TransactionIdNotFoundError body. One server plays both environments: the
/// client's production URL is `<base>/production`, its sandbox URL `<base>/sandbox`.
public final class FakeAppStoreAPI: @unchecked Sendable {
    public struct Seen: Sendable {
        public var method: String
        public var target: String
        public var body: [UInt8]
        public var token: String
    }

    private let server: LoopbackHTTPServer
    private let state: State

    public var productionURL: String { server.baseURL + "/production" }
    public var sandboxURL: String { server.baseURL + "/sandbox" }

    /// - Parameter now: Apple's clock (a test that moves the client's clock moves this one with it).
    public init(publicKey: PublicKey, issuerId: String, keyId: String, bundleId: String, now: @escaping @Sendable () -> Date = { Date() }) {
        let state = State(publicKey: publicKey, issuerId: issuerId, keyId: keyId, bundleId: bundleId, now: now)
        server = LoopbackHTTPServer { [state] request in state.handle(request) }
        self.state = state
    }

    public func stop() { server.stop() }

    /// Answers requests to `target` with `respond` (after the JWT check), before anything scripted or stored:
    /// for an endpoint that acts, such as Request a Test Notification, which makes Apple send one.
    public func handle(_ target: String, with respond: @escaping @Sendable (LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply?) {
        state.locked { $0.handlers[target] = respond }
    }

    /// The JSON answered at `target` (e.g. `/production/inApps/v1/transactions/1000`).
    public func store(_ json: String, at target: String) { state.locked { $0.stored[target] = json } }
    /// Replies for the next requests to `target`, before the stored answer (nil: accept and never answer).
    public func script(_ target: String, _ replies: LoopbackHTTPServer.Reply?...) {
        state.locked { $0.scripted[target, default: []] += replies.map { Scripted(reply: $0) } }
    }

    public var requests: [Seen] { state.locked { $0.seen } }
    /// Why JWTs were refused; empty when every token was as Apple wants it.
    public var jwtProblems: [String] { state.locked { $0.problems } }

    public static let notFound = #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#

    private struct Scripted { var reply: LoopbackHTTPServer.Reply? }

    private final class State: @unchecked Sendable {
        struct Values {
            var stored: [String: String] = [:]
            var scripted: [String: [Scripted]] = [:]
            var handlers: [String: @Sendable (LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply?] = [:]
            var seen: [Seen] = []
            var problems: [String] = []
        }

        let publicKey: PublicKey
        let issuerId: String
        let keyId: String
        let bundleId: String
        let now: @Sendable () -> Date
        private let lock = NSLock()
        private var values = Values()

        init(publicKey: PublicKey, issuerId: String, keyId: String, bundleId: String, now: @escaping @Sendable () -> Date) {
            self.publicKey = publicKey
            self.issuerId = issuerId
            self.keyId = keyId
            self.bundleId = bundleId
            self.now = now
        }

        func locked<T>(_ body: (inout Values) -> T) -> T { lock.withLock { body(&values) } }

        func handle(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply? {
            let authorization = request.header("Authorization") ?? ""
            let token = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
            locked { $0.seen.append(Seen(method: request.method, target: request.target, body: request.body, token: token)) }
            if let problem = check(token) {
                locked { $0.problems.append(problem) }
                return LoopbackHTTPServer.Reply(status: 401, body: [])
            }
            let (handler, scripted, stored) = locked { v -> ((@Sendable (LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply?)?, Scripted?, String?) in
                let next = v.scripted[request.target]?.isEmpty == false ? v.scripted[request.target]?.removeFirst() : nil
                return (v.handlers[request.target], next, v.stored[request.target])
            }
            if let handler { return handler(request) }
            if let scripted { return scripted.reply }
            guard let stored else { return .json(404, FakeAppStoreAPI.notFound) }
            return .json(200, stored)
        }

        /// What Apple would refuse in this token; nil when it is acceptable.
        private func check(_ token: String) -> String? {
            guard let jws = try? CompactJWS(token), let header = try? jws.header() else { return "not a compact JWS" }
            guard header["alg"]?.string == "ES256", header["kid"]?.string == keyId, header["typ"]?.string == "JWT" else {
                return "header \(header.canonical)"
            }
            guard publicKey.verifyES256(message: Array(jws.signingInput), signature: jws.signature) else { return "signature" }
            guard let claims = JSONValue.parse(jws.payload), let iat = claims["iat"]?.int64, let exp = claims["exp"]?.int64 else {
                return "claims without iat and exp"
            }
            guard claims["iss"]?.string == issuerId, claims["aud"]?.string == "appstoreconnect-v1",
                  claims["bid"]?.string == bundleId, exp > iat, exp - iat <= 3600 else {
                return "claims \(claims.canonical)"
            }
            // Apple's clock: a token past its exp is refused; one issued more than a minute in its future too.
            let nowSeconds = Int64(now().timeIntervalSince1970)
            guard exp > nowSeconds else { return "expired \(nowSeconds - exp) s ago" }
            guard iat <= nowSeconds + 60 else { return "issued \(iat - nowSeconds) s in the future" }
            return nil
        }
    }
}
