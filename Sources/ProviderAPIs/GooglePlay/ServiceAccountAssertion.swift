import Foundation
import Toolkit

/// The signed JWT a service account trades for an access token (OAuth 2.0 JWT bearer grant,
/// RFC 7523; Google's "Using OAuth 2.0 for Server to Server Applications").
enum ServiceAccountAssertion {
    static let scope = "https://www.googleapis.com/auth/androidpublisher"
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Google accepts at most one hour between `iat` and `exp`.
    static let lifetimeSeconds: Int64 = 3600

    /// `header.claims.signature`, each base64url; nil when the key cannot sign.
    static func make(key: ServiceAccountKey, audience: String, issuedAt: Int64) -> String? {
        CompactJWS.signed(header: Header(alg: "RS256", typ: "JWT", kid: key.privateKeyId),
                          claims: Claims(iss: key.clientEmail, scope: scope, aud: audience, iat: issuedAt, exp: issuedAt + lifetimeSeconds),
                          sign: key.privateKey.signRSASHA256)
    }

    private struct Header: Encodable {
        var alg: String
        var typ: String
        var kid: String
    }

    private struct Claims: Encodable {
        var iss: String
        var scope: String
        var aud: String
        var iat: Int64
        var exp: Int64
    }
}
