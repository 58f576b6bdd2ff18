import Config
import Foundation
import Rejections
import Toolkit

/// A signed-in operator, as the session cookie names them.
public struct ConsoleOperator: Sendable, Equatable {
    public let name: String
    /// May post actions (`actions: true`); a read-only operator sees none and is refused any.
    public let canAct: Bool
    /// The token every form of this session carries (`csrf`): a MAC of the session's nonce.
    let csrfToken: String
}

/// Sign-in and sessions (docs/console.md). A session is a cookie the server can check without keeping
/// it: `v1.<name>.<expires ms>.<nonce>.<MAC>`, the MAC an HMAC-SHA-256 under a key the store keeps for
/// every replica, over those fields and a digest of the operator's credential, so taking a credential
/// out of `api.tokens` ends its sessions. CSRF tokens are MACs of the session's nonce under the same key.
public struct OperatorSessions: Sendable {
    public static let cookieName = "tollgate_console"

    let operators: [APIToken]
    private let key: [UInt8]
    let lifetimeMs: Int64
    let cookiePath: String
    /// Failed sign-ins, for every address together: credentials are 32 characters or more, so this only
    /// bounds a flood of guesses. A right credential is never held back by it (a customer flooding the
    /// sign-in page cannot lock operators out).
    private let failedSignIns = RateLimiter(perSecond: 10, burst: 30)
    let now: @Sendable () -> Int64

    public init(operators: [APIToken], key: [UInt8], lifetimeMinutes: Int, cookiePath: String,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1_000) }) {
        self.operators = operators.filter { $0.kind == .operator }
        self.key = key
        lifetimeMs = Int64(lifetimeMinutes) * 60_000
        self.cookiePath = cookiePath
        self.now = now
    }

    /// The operator `credential` signs in, and their session's cookie value.
    func signIn(credential: String) throws(Rejection) -> (ConsoleOperator, cookie: String) {
        guard credential.utf8.count <= 1_024, let index = ConstantTime.firstMatch(credential, in: operators.map(\.token)),
              let name = operators[index].name else {
            if let seconds = failedSignIns.take() {
                throw Rejection(ConsoleReason.tooManySignIns, "too many failed sign-ins; try again shortly", retryAfterSeconds: seconds)
            }
            throw Rejection(ConsoleReason.invalidCredential, "that is not an operator credential")
        }
        var nonce = [UInt8](repeating: 0, count: 18)
        for i in nonce.indices { nonce[i] = UInt8.random(in: .min ... .max) }
        let fields = [Base64.encodeURL(Array(name.utf8)), String(now() + lifetimeMs), Base64.encodeURL(nonce)]
        let mac = Base64.encodeURL(self.mac(fields, token: operators[index].token))
        let value = (["v1"] + fields + [mac]).joined(separator: ".")
        return (ConsoleOperator(name: name, canAct: operators[index].actions, csrfToken: csrf(nonce: fields[2])), value)
    }

    /// The operator whose session `cookie` is, if it is one and has not ended.
    func session(_ cookie: String) throws(Rejection) -> ConsoleOperator {
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard cookie.utf8.count <= 512, parts.count == 5, parts[0] == "v1", let nameBytes = Base64.decodeURL(Substring(parts[1])),
              let expires = Int64(parts[2]), let mac = Base64.decodeURL(Substring(parts[4])) else {
            throw Rejection(ConsoleReason.signInRequired, "sign in to use the console")
        }
        let name = String(decoding: nameBytes, as: UTF8.self)
        guard let credential = operators.first(where: { $0.name == name }),
              ConstantTime.equals(mac, self.mac(Array(parts[1...3]), token: credential.token)) else {
            throw Rejection(ConsoleReason.signInRequired, "sign in to use the console")
        }
        guard expires > now() else { throw Rejection(ConsoleReason.sessionExpired, "the session has ended: sign in again") }
        return ConsoleOperator(name: name, canAct: credential.actions, csrfToken: csrf(nonce: parts[3]))
    }

    /// The `Set-Cookie` value of a session: only this console's pages see it, never a script, never
    /// another site's request, only over TLS (browsers take `Secure` cookies over plain HTTP from
    /// localhost only, which is where `tollgate dev` serves).
    func setCookie(_ value: String) -> String {
        "\(Self.cookieName)=\(value); Path=\(cookiePath); Max-Age=\(lifetimeMs / 1_000); HttpOnly; Secure; SameSite=Strict"
    }

    func clearCookie() -> String {
        "\(Self.cookieName)=; Path=\(cookiePath); Max-Age=0; HttpOnly; Secure; SameSite=Strict"
    }

    /// Whether a posted form's `csrf` is this session's.
    static func checkCSRF(_ posted: String?, for operator: ConsoleOperator) throws(Rejection) {
        guard let posted, ConstantTime.equals(posted, `operator`.csrfToken) else {
            throw Rejection(ConsoleReason.csrfTokenInvalid, "the form's CSRF token is not this session's: reload the page and try again")
        }
    }

    private func mac(_ fields: [String], token: String) -> [UInt8] {
        let message = "console-session|" + fields.joined(separator: "|") + "|" + Digest.hex(Digest.sha256(token))
        return Digest.hmacSHA256(key: key, message: Array(message.utf8))
    }

    private func csrf(nonce: String) -> String {
        Base64.encodeURL(Digest.hmacSHA256(key: key, message: Array("console-csrf|\(nonce)".utf8)))
    }
}
