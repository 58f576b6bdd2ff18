import Events
import Rejections
import Toolkit

/// Checks the `Authorization: Bearer <OIDC JWT>` that Pub/Sub puts on each push
/// (https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions): RS256 only, a `kid` of
/// Google's key set, then Google's issuer, this endpoint's audience, the subscription's service
/// account, and the token's lifetime with at most `allowedSkew` seconds of clock difference.
/// Messages never contain the token.
struct GooglePushAuthenticator: Sendable {
    let audience: String
    let serviceAccountEmail: String
    let keySet: GoogleKeySet

    static let issuers: Set<String> = ["accounts.google.com", "https://accounts.google.com"]
    static let allowedSkew: Int64 = 60
    /// Google's tokens are about 1 KB; anything far larger is not one.
    static let maxTokenBytes = 16_384

    func verify(authorization: String?, now: Timestamp) async throws(Rejection) -> PushIdentity {
        let token = try Self.bearerToken(authorization)
        let header = try Self.header(of: token)
        // The algorithm is fixed here, never taken from the token: `none` and HS256 keyed with the
        // public key (the classic confusion) are refused before any key is touched.
        guard let alg = header["alg"]?.string else { throw Rejection(.unsupportedAlg, "the token header has no alg") }
        guard alg == "RS256" else { throw Rejection(.unsupportedAlg, "alg \(GoogleKeySet.printable(alg)) is not RS256") }
        if header["crit"] != nil { throw Rejection(.malformedToken, "the token header lists crit extensions, which Google tokens do not use") }
        guard let kid = header["kid"]?.string, !kid.isEmpty else { throw Rejection(.unknownKeyId, "the token header has no kid") }

        let jws: CompactJWS
        do { jws = try CompactJWS(token) } catch {
            if case .malformed(let why) = error { throw Rejection(.malformedToken, why) }
            throw Rejection(.malformedToken, "not a JWT")
        }
        let key = try await keySet.key(id: kid, now: now)
        guard key.verifyRSASHA256(message: jws.signingInput, signature: jws.signature) else {
            throw Rejection(.badSignature, "the RS256 signature does not verify with key \(GoogleKeySet.printable(kid))")
        }
        guard let claims = JSONValue.parse(jws.payload)?.object else {
            throw Rejection(.malformedToken, "the token payload is not a JSON object")
        }
        return try check(claims, now: now)
    }

    private func check(_ claims: [String: JSONValue], now: Timestamp) throws(Rejection) -> PushIdentity {
        guard let issuer = claims["iss"]?.string, Self.issuers.contains(issuer) else {
            throw Rejection(.wrongIssuer, "iss is not accounts.google.com or https://accounts.google.com")
        }
        // One audience, exactly: a token minted for another endpoint must not open this one.
        guard claims["aud"]?.string == audience else {
            throw Rejection(.wrongAudience, "aud is not the configured audience (sources.google.audience)")
        }
        guard let email = claims["email"]?.string, email == serviceAccountEmail else {
            throw Rejection(.wrongEmail, "email is not the configured push service account (sources.google.serviceAccountEmail)")
        }
        guard claims["email_verified"] == .bool(true) else { throw Rejection(.emailNotVerified, "email_verified is not true") }
        guard let issuedAt = Self.seconds(claims["iat"]), let expiresAt = Self.seconds(claims["exp"]) else {
            throw Rejection(.invalidTokenTime, "iat and exp must both be whole seconds")
        }
        guard expiresAt > issuedAt else { throw Rejection(.invalidTokenTime, "exp is not after iat") }
        let nowSeconds = now.millisecondsSince1970 >= 0 ? now.millisecondsSince1970 / 1000 : -((-now.millisecondsSince1970 + 999) / 1000)
        // Claims may hold any Int64: the skew goes on `now`, which cannot overflow, never on a claim.
        if nowSeconds - Self.allowedSkew >= expiresAt {
            throw Rejection(.tokenExpired, "the token expired at \(Self.describe(seconds: expiresAt))")
        }
        let notBefore = max(issuedAt, Self.seconds(claims["nbf"]) ?? issuedAt)
        if notBefore > nowSeconds + Self.allowedSkew {
            throw Rejection(.tokenNotYetValid, "the token is valid from \(Self.describe(seconds: notBefore))")
        }
        return PushIdentity(email: email, subject: claims["sub"]?.string)
    }

    /// `Bearer <token>`; the scheme is case-insensitive (RFC 9110 section 11.1).
    private static func bearerToken(_ authorization: String?) throws(Rejection) -> String {
        guard let authorization, !authorization.isEmpty else {
            throw Rejection(.missingAuthorization, "the Authorization header is missing: enable authentication on the push subscription")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw Rejection(.missingAuthorization, "the Authorization header is not a Bearer token")
        }
        let token = parts[1].drop(while: { $0 == " " })
        guard !token.isEmpty, token.utf8.count <= maxTokenBytes else {
            throw Rejection(.malformedToken, "the bearer token is empty or longer than \(maxTokenBytes) bytes")
        }
        return String(token)
    }

    /// The header alone, so `alg` can be judged even for an unsigned (`none`) token with an empty signature.
    private static func header(of token: String) throws(Rejection) -> JSONValue {
        guard let dot = token.utf8.firstIndex(of: UInt8(ascii: ".")),
              let bytes = Base64.decodeURL(Array(token.utf8[..<dot])[...]),
              let header = JSONValue.parse(bytes), header.object != nil else {
            throw Rejection(.malformedToken, "the bearer token is not a JWT with a base64url JSON header")
        }
        return header
    }

    /// A claim's time for a message: RFC 3339, or the raw seconds when they fit no millisecond Timestamp.
    private static func describe(seconds: Int64) -> String {
        let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return overflow ? "\(seconds) s since 1970" : Timestamp(millisecondsSince1970: milliseconds).rfc3339
    }

    private static func seconds(_ value: JSONValue?) -> Int64? {
        guard case .number(let number)? = value else { return nil }
        return number.int64
    }
}

/// Who sent the push, as the verified token says.
struct PushIdentity: Sendable, Equatable {
    var email: String
    var subject: String?
}
