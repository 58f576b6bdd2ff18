import Foundation
import Toolkit

/// Apple's App Store Server API on a loopback port: it checks each request's JWT as Apple documents
/// ("Generating JSON Web Tokens for API requests": ES256 with the In-App Purchase key, `kid`, `typ`,
/// `iss`, `aud` appstoreconnect-v1, `bid`, `exp` at most an hour after `iat`) and answers 401 with no
/// body otherwise, as Apple does; then answers what the test stored or scripted for the request target,
/// else 404 with Apple's TransactionIdNotFoundError body. One server plays both environments: the
/// client's production URL is `<base>/production`, its sandbox URL `<base>/sandbox`.
final class FakeAppStoreAPI: @unchecked Sendable {
    struct Seen: Sendable {
        var method: String
        var target: String
        var body: [UInt8]
        var token: String
    }

    private let server: LoopbackHTTPServer
    private let state: State

    var productionURL: String { server.baseURL + "/production" }
    var sandboxURL: String { server.baseURL + "/sandbox" }

    init(publicKey: PublicKey, issuerId: String, keyId: String, bundleId: String) {
        let state = State(publicKey: publicKey, issuerId: issuerId, keyId: keyId, bundleId: bundleId)
        server = LoopbackHTTPServer { [state] request in state.handle(request) }
        self.state = state
    }

    func stop() { server.stop() }

    /// The JSON answered at `target` (e.g. `/production/inApps/v1/transactions/1000`).
    func store(_ json: String, at target: String) { state.locked { $0.stored[target] = json } }
    /// Replies for the next requests to `target`, before the stored answer (nil: accept and never answer).
    func script(_ target: String, _ replies: LoopbackHTTPServer.Reply?...) {
        state.locked { $0.scripted[target, default: []] += replies.map { Scripted(reply: $0) } }
    }

    var requests: [Seen] { state.locked { $0.seen } }
    /// Why JWTs were refused; empty when every token was as Apple wants it.
    var jwtProblems: [String] { state.locked { $0.problems } }

    static let notFound = #"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#

    private struct Scripted { var reply: LoopbackHTTPServer.Reply? }

    private final class State: @unchecked Sendable {
        struct Values {
            var stored: [String: String] = [:]
            var scripted: [String: [Scripted]] = [:]
            var seen: [Seen] = []
            var problems: [String] = []
        }

        let publicKey: PublicKey
        let issuerId: String
        let keyId: String
        let bundleId: String
        private let lock = NSLock()
        private var values = Values()

        init(publicKey: PublicKey, issuerId: String, keyId: String, bundleId: String) {
            self.publicKey = publicKey
            self.issuerId = issuerId
            self.keyId = keyId
            self.bundleId = bundleId
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
            let (scripted, stored) = locked { v -> (Scripted?, String?) in
                let next = v.scripted[request.target]?.isEmpty == false ? v.scripted[request.target]?.removeFirst() : nil
                return (next, v.stored[request.target])
            }
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
            return nil
        }
    }
}
