import Toolkit
/// The two forms Google publishes its OIDC signing keys in, read into `kid` -> RSA key:
/// JWKS (`https://www.googleapis.com/oauth2/v3/certs`: `{"keys": [{"kid", "kty": "RSA", "n", "e", ...}]}`)
/// and PEM certificates (`.../oauth2/v1/certs`: `{"<kid>": "-----BEGIN CERTIFICATE-----..."}`).
public enum GoogleKeyDocument {
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public static func keys(from bytes: [UInt8]) throws(Invalid) -> [String: PublicKey] {
        guard let object = JSONValue.parse(bytes)?.object else { throw Invalid("not a JSON object") }
        let keys: [String: PublicKey]
        if let entries = object["keys"] {
            guard let list = entries.array else { throw Invalid("keys is not an array") }
            keys = try jwks(list)
        } else {
            keys = try certificates(object)
        }
        guard !keys.isEmpty else { throw Invalid("holds no RS256 key") }
        return keys
    }

    /// JWKs that cannot serve RS256 (another `kty`, `use` other than `sig`, `alg` other than RS256)
    /// are skipped, so a set that grows other kinds of keys keeps working.
    private static func jwks(_ list: [JSONValue]) throws(Invalid) -> [String: PublicKey] {
        var keys: [String: PublicKey] = [:]
        for (index, entry) in list.enumerated() {
            guard let jwk = entry.object else { throw Invalid("keys[\(index)] is not an object") }
            guard jwk["kty"]?.string == "RSA", (jwk["use"]?.string ?? "sig") == "sig",
                  (jwk["alg"]?.string ?? "RS256") == "RS256" else { continue }
            guard let kid = jwk["kid"]?.string, !kid.isEmpty else { throw Invalid("keys[\(index)] has no kid") }
            guard let n = jwk["n"]?.string.flatMap({ Base64.decodeURL($0[...]) }),
                  let e = jwk["e"]?.string.flatMap({ Base64.decodeURL($0[...]) }) else {
                throw Invalid("keys[\(index)] (kid \(kid)) has no base64url n and e")
            }
            guard let key = PublicKey(rsaModulus: n, exponent: e), key.bits >= PublicKey.minimumRSABits else {
                throw Invalid("keys[\(index)] (kid \(kid)) is not an RSA key of at least \(PublicKey.minimumRSABits) bits")
            }
            guard keys.updateValue(key, forKey: kid) == nil else { throw Invalid("kid \(kid) appears twice") }
        }
        return keys
    }

    private static func certificates(_ object: [String: JSONValue]) throws(Invalid) -> [String: PublicKey] {
        var keys: [String: PublicKey] = [:]
        for (kid, value) in object {
            guard let pem = value.string, pem.contains("-----BEGIN CERTIFICATE-----") else {
                throw Invalid("\(kid) is neither keys (JWKS) nor a PEM certificate (v1 certs)")
            }
            guard let key = Certificate.load(pemOrDER: Array(pem.utf8))?.publicKey, key.isRSA,
                  key.bits >= PublicKey.minimumRSABits else {
                throw Invalid("the certificate of kid \(kid) does not hold an RSA key of at least \(PublicKey.minimumRSABits) bits")
            }
            keys[kid] = key
        }
        return keys
    }

    /// Seconds a response may be cached: `max-age` of `Cache-Control`, less its `Age`; nil without one.
    static func maxAge(cacheControl: String?, age: String?) -> Int64? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let trimmed = directive.trimmingSpaces.lowercased()
            guard trimmed.hasPrefix("max-age="), let seconds = Int64(trimmed.dropFirst("max-age=".count)), seconds >= 0 else { continue }
            let elapsed = age.flatMap { Int64($0.trimmingSpaces) }.map { max(0, $0) } ?? 0
            return max(0, seconds - elapsed)
        }
        return nil
    }
}

private extension StringProtocol {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
