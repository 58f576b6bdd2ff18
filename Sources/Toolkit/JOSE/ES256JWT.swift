/// A compact JWS signed ES256 with a key the verifier already holds (no `x5c`, no key set): the
/// merchant-signed user tokens and sign-in assertions. Only the algorithm, the signature and the
/// payload's shape are checked here; each caller checks its claims and names its own refusals.
public enum ES256JWT {
    public enum Failure: Error, Equatable {
        case malformed, wrongAlgorithm, critical, badSignature, payloadNotObject
    }

    /// The claims of `text` once its signature verifies with `key`.
    public static func verifiedClaims(_ text: String, key: PublicKey) throws(Failure) -> JSONValue {
        let jws: CompactJWS
        let header: JSONValue
        do {
            jws = try CompactJWS(text)
            header = try jws.header()
        } catch {
            throw .malformed
        }
        // ES256 and nothing else: no "none", no HMAC keyed with the public key, no other curve.
        guard header["alg"]?.string == "ES256" else { throw .wrongAlgorithm }
        // Extensions the verifier would have to understand are refused rather than ignored (RFC 7515 4.1.11).
        guard header["crit"] == nil else { throw .critical }
        guard key.verifyES256(message: Array(jws.signingInput), signature: jws.signature) else { throw .badSignature }
        guard let claims = JSONValue.parse(jws.payload), claims.object != nil else { throw .payloadNotObject }
        return claims
    }

    /// A whole number of seconds (`exp`, `iat`), or nil.
    public static func seconds(_ value: JSONValue?) -> Int64? {
        guard case .number(let number)? = value else { return nil }
        return number.int64
    }
}
