import Rejections
import Toolkit
import Verifiers

/// The merchant sign-in page's statement of who signed in: a compact JWS, ES256 only, signed with the
/// key of `sileo.vendors[].signIn.assertionKeyFile`, whose payload carries `sub` (the user id the
/// entitlement store knows), `name`, `email`, `exp`, `iat` and the `nonce` Tollgate's /authenticate
/// issued (docs/sileo.md).
struct SileoAssertion: Sendable, Equatable {
    var user: String
    var name: String?
    var email: String?
    var nonce: String

    /// The longest an assertion may live (`exp - iat`) and the clock skew allowed on `iat`: it is made
    /// for one redirect, seconds before it is used.
    static let maxLifetimeSeconds: Int64 = 600
    static let clockSkewSeconds: Int64 = 60

    /// Verifies `text` with `key` at `nowMs`. Only the signature, the algorithm and the claims are
    /// checked here; the nonce is the caller's to consume.
    static func verify(_ text: String, key: PublicKey, nowMs: Int64) throws(Rejection) -> SileoAssertion {
        let claims: JSONValue
        do { claims = try ES256JWT.verifiedClaims(text, key: key) } catch {
            let why = switch error {
            case .malformed: "the assertion is not a compact JWS"
            case .wrongAlgorithm: "the assertion's alg must be ES256"
            case .critical: "the assertion's header has crit, which is not supported"
            case .badSignature: "the assertion's signature does not verify with the vendor's key"
            case .payloadNotObject: "the assertion's payload is not a JSON object"
            }
            throw Rejection(.invalidAssertion, why)
        }
        guard let user = claims["sub"]?.string, isPrintable(user, max: 256) else {
            throw Rejection(.invalidAssertion, "the assertion's sub must be a user id of 1 to 256 printable characters")
        }
        guard let nonce = claims["nonce"]?.string, !nonce.isEmpty, nonce.utf8.count <= 128 else {
            throw Rejection(.invalidAssertion, "the assertion has no nonce")
        }
        guard let exp = ES256JWT.seconds(claims["exp"]), let iat = ES256JWT.seconds(claims["iat"]) else {
            throw Rejection(.invalidAssertion, "the assertion's exp and iat must be whole seconds")
        }
        let now = nowMs / 1000
        guard exp > now else { throw Rejection(.assertionExpired, "the assertion has expired") }
        guard iat <= now + clockSkewSeconds, exp > iat, exp - iat <= maxLifetimeSeconds else {
            throw Rejection(.assertionExpired, "the assertion must be issued now and live at most \(maxLifetimeSeconds) seconds")
        }
        let name = claims["name"]?.string.flatMap { isPrintable($0, max: 256) ? $0 : nil }
        let email = claims["email"]?.string.flatMap { isPrintable($0, max: 320) ? $0 : nil }
        return SileoAssertion(user: user, name: name, email: email, nonce: nonce)
    }

    private static func isPrintable(_ text: String, max: Int) -> Bool {
        !text.isEmpty && text.count <= max && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
