import COpenSSL

/// Secret comparison whose time depends on neither the position of the first difference nor the
/// lengths: both sides are hashed to 32 bytes first, then compared with `CRYPTO_memcmp`.
public enum ConstantTime {
    public static func equals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        let a = Digest.sha256(lhs)
        let b = Digest.sha256(rhs)
        return CRYPTO_memcmp(a, b, a.count) == 0
    }

    public static func equals(_ lhs: String, _ rhs: String) -> Bool {
        equals(Array(lhs.utf8), Array(rhs.utf8))
    }

    /// The index of the candidate equal to `secret`, comparing against every candidate
    /// (no early exit, so timing does not reveal which one matched).
    public static func firstMatch(_ secret: String, in candidates: [String]) -> Int? {
        var match: Int?
        for (index, candidate) in candidates.enumerated() where equals(secret, candidate) && match == nil {
            match = index
        }
        return match
    }
}
