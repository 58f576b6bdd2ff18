import Rejections
import Toolkit
import Verifiers

/// The merchant backend's statement that an app's caller is one user: a compact JWS, ES256 only, signed
/// with the key of `api.userTokenKeys.<app>`, whose claims carry `sub` (the user), `aud` (the app),
/// `exp` and `iat`, living at most an hour (docs/security.md). A client credential acts for no one else.
struct UserToken: Sendable, Equatable {
    var user: String

    static let maxLifetimeSeconds: Int64 = 3_600
    static let clockSkewSeconds: Int64 = 60

    /// Verifies `text` for `app` with `key` at `nowMs`.
    static func verify(_ text: String, app: String, key: PublicKey, nowMs: Int64) throws(Rejection) -> UserToken {
        guard text.utf8.count <= 4_096 else { throw Rejection(.invalidUserToken, "the user token is longer than 4096 bytes") }
        let claims: JSONValue
        do { claims = try ES256JWT.verifiedClaims(text, key: key) } catch {
            let why = switch error {
            case .malformed: "is not a compact JWS"
            case .wrongAlgorithm: "must be signed ES256"
            case .critical: "has crit in its header, which is not supported"
            case .badSignature: "does not verify with the app's key (api.userTokenKeys)"
            case .payloadNotObject: "has a payload that is not a JSON object"
            }
            throw Rejection(.invalidUserToken, "the user token \(why)")
        }
        // A token for another app of the same merchant (one key may serve several) is not this app's.
        let audiences: [String] = switch claims["aud"] {
        case .string(let one)?: [one]
        case .array(let many)?: many.compactMap(\.string)
        default: []
        }
        guard audiences.contains(app) else { throw Rejection(.invalidUserToken, "the user token's aud is not \(app)") }
        guard let user = claims["sub"]?.string, !user.isEmpty, user.unicodeScalars.count <= 256,
              !user.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw Rejection(.invalidUserToken, "the user token's sub must be a user id of 1 to 256 characters without control characters")
        }
        guard let exp = ES256JWT.seconds(claims["exp"]), let iat = ES256JWT.seconds(claims["iat"]) else {
            throw Rejection(.invalidUserToken, "the user token's exp and iat must be whole seconds")
        }
        let now = nowMs / 1000
        guard exp > now else { throw Rejection(.userTokenExpired, "the user token has expired") }
        guard iat <= now + clockSkewSeconds, exp > iat, exp - iat <= maxLifetimeSeconds else {
            throw Rejection(.invalidUserToken, "the user token must be issued now and live at most \(maxLifetimeSeconds) seconds")
        }
        return UserToken(user: user)
    }
}

/// Signs user tokens as a merchant's backend does (`tollgate user-token`, the tests): ES256, `sub`, `aud`, `iat`, `exp`.
public enum UserTokenSigner {
    struct Header: Encodable { var alg = "ES256"; var typ = "JWT" }
    struct Claims: Encodable { var sub: String; var aud: String; var iat: Int64; var exp: Int64 }

    public static func sign(user: String, app: String, key: PrivateKey, nowMs: Int64, ttlSeconds: Int64 = 900) -> String? {
        let now = nowMs / 1000
        return CompactJWS.signed(header: Header(), claims: Claims(sub: user, aud: app, iat: now, exp: now + ttlSeconds)) { key.signES256($0) }
    }
}
