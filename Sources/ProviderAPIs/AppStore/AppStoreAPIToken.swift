import Foundation
import Toolkit

/// The bearer JWT of App Store Server API requests, as Apple's "Generating JSON Web Tokens for API
/// requests" describes it: ES256 with the In-App Purchase key, header `kid` and `typ`, claims `iss`
/// (issuer id), `iat`, `exp` (at most 60 minutes later), `aud` `appstoreconnect-v1`, `bid`.
///
/// One token is reused until five minutes before it expires: signing is cheap, but a fresh token per
/// request would put the key to work on every call of a backfill.
actor AppStoreTokenSigner {
    static let audience = "appstoreconnect-v1"
    static let lifetimeSeconds: Int64 = 30 * 60
    static let renewBeforeSeconds: Int64 = 5 * 60

    private let credentials: AppStoreAPICredentials
    private let now: @Sendable () -> Date
    private var token: (value: String, expiresAt: Int64)?

    init(credentials: AppStoreAPICredentials, now: @escaping @Sendable () -> Date) {
        self.credentials = credentials
        self.now = now
    }

    /// The current token, signed anew when it is close to expiry; nil when the key cannot sign.
    func current() -> String? {
        let issuedAt = Int64(now().timeIntervalSince1970)
        if let token, issuedAt < token.expiresAt - Self.renewBeforeSeconds { return token.value }
        guard let signed = Self.sign(credentials, issuedAt: issuedAt) else { return nil }
        token = (signed, issuedAt + Self.lifetimeSeconds)
        return signed
    }

    /// Forgets a token Apple refused (401), so the next call signs a new one.
    func drop(_ rejected: String) {
        if token?.value == rejected { token = nil }
    }

    static func sign(_ credentials: AppStoreAPICredentials, issuedAt: Int64) -> String? {
        CompactJWS.signed(header: Header(alg: "ES256", kid: credentials.keyId, typ: "JWT"),
                          claims: Claims(iss: credentials.issuerId, iat: issuedAt, exp: issuedAt + lifetimeSeconds, aud: audience,
                                         bid: credentials.bundleId),
                          sign: credentials.privateKey.signES256)
    }

    private struct Header: Encodable {
        var alg: String
        var kid: String
        var typ: String
    }

    private struct Claims: Encodable {
        var iss: String
        var iat: Int64
        var exp: Int64
        var aud: String
        var bid: String
    }
}
