import Rejections
import Synchronization
import Toolkit

/// Verifies an `x5c` header to a configured root, Apple's way: exactly three certificates, the
/// chain built from `x5c[0]` through `x5c[1]` to a configured root (`x5c[2]` is ignored, never
/// trusted), Apple's marker OIDs on leaf and intermediate, validity at the effective time.
/// A chain is cached only once a JWS signature verified with its leaf's key (a copied public chain
/// with a forged signature leaves no trace), keyed by the SHA-256 of the whole chain (and, in front
/// of that, of the exact header bytes), so a steady stream costs one ES256 check per JWS.
public final class AppleChainVerifier: Sendable {
    public static let leafOID = "1.2.840.113635.100.6.11.1"
    public static let intermediateOID = "1.2.840.113635.100.6.2.1"

    private let trustStore: TrustStore
    private let strict: Bool
    /// SHA-256 of the exact JWS header bytes: a repeat costs one digest and one lookup, no JSON or base64.
    private let byHeader: ChainCache
    /// SHA-256 of the three DER certificates together: the same chain under any header.
    private let byFingerprint: ChainCache

    public init(trustStore: TrustStore, strict: Bool = false, cacheCapacity: Int = 256, cacheTTL: Duration = .seconds(3_600)) {
        self.trustStore = trustStore
        self.strict = strict
        self.byHeader = ChainCache(capacity: cacheCapacity, ttl: cacheTTL)
        self.byFingerprint = ChainCache(capacity: cacheCapacity, ttl: cacheTTL)
    }

    /// The signer of a JWS whose signature verified: `alg` must be ES256, the `x5c` chain must verify
    /// at `time` and the ES256 signature with the chain's leaf. Only then is the chain remembered; a
    /// repeat of the header costs one lookup plus the validity check at `time` and the signature check.
    public func verifiedSigner(for jws: CompactJWS, at time: Int64) throws(Rejection) -> VerifiedSigner {
        let key = ChainCache.Key(digestOf: Array(jws.headerSegment))
        if let hit = try cached(key, in: byHeader, at: time) {
            try Self.checkSignature(of: jws, with: hit.signer)
            return hit.signer
        }
        let header: JSONValue
        do { header = try jws.header() } catch {
            if case .malformed(let why) = error { throw Rejection(.malformedJWS, why) }
            throw Rejection(.malformedJWS, "bad header")
        }
        guard let alg = header["alg"]?.string else { throw Rejection(.unsupportedAlg, "the JWS header has no alg") }
        guard alg == "ES256" else { throw Rejection(.unsupportedAlg, "alg \(alg) is not accepted; Apple signs with ES256") }
        guard header["crit"] == nil else { throw Rejection(.malformedJWS, "the JWS header has crit extensions Tollgate does not understand") }
        let (entry, fingerprint, fromCache) = try verifiedChain(x5c: header["x5c"], at: time)
        try Self.checkSignature(of: jws, with: entry.signer)
        if !fromCache { byFingerprint.insert(fingerprint, entry) }
        byHeader.insert(key, entry)
        return entry.signer
    }

    /// The verified signer once the chain alone is verified at `time` (seconds since 1970). With no
    /// signature checked, nothing is cached: only a lookup of chains already proven.
    public func verify(x5c: JSONValue?, at time: Int64) throws(Rejection) -> VerifiedSigner {
        try verifiedChain(x5c: x5c, at: time).entry.signer
    }

    private static func checkSignature(of jws: CompactJWS, with signer: VerifiedSigner) throws(Rejection) {
        guard signer.publicKey.verifyES256(message: jws.signingInput, signature: jws.signature) else {
            throw Rejection(.badSignature, "the ES256 signature does not match")
        }
    }

    /// A cache hit still has to be valid at this delivery's time.
    private func cached(_ key: ChainCache.Key, in cache: ChainCache, at time: Int64) throws(Rejection) -> ChainCache.Entry? {
        guard let hit = cache.lookup(key) else { return nil }
        guard hit.validity.contains(time) else {
            throw Rejection(.certificateExpired, "a certificate of the chain is not valid at \(time)")
        }
        return hit
    }

    /// The chain's entry, its cache key and whether it came from the cache (the caller inserts a new
    /// one once the signature verified).
    private func verifiedChain(x5c: JSONValue?, at time: Int64) throws(Rejection) -> (entry: ChainCache.Entry, key: ChainCache.Key, fromCache: Bool) {
        guard let x5c else { throw Rejection(.invalidCertificate, "the JWS header has no x5c") }
        guard case .array(let items) = x5c else { throw Rejection(.invalidCertificate, "x5c is not an array") }
        guard items.count == 3 else {
            throw Rejection(.invalidChainLength, "x5c must hold exactly 3 certificates, found \(items.count)")
        }
        var ders: [[UInt8]] = []
        for (index, item) in items.enumerated() {
            guard let text = item.string else { throw Rejection(.invalidCertificate, "x5c entries must be base64 strings") }
            guard let der = Base64.decodeStandard(text) else {
                throw Rejection(.invalidCertificate, "x5c[\(index)] is not a base64 DER certificate")
            }
            ders.append(der)
        }
        // The same certificates under another header (or JSON spelling) are the same chain:
        // found by their fingerprints, they cost no X.509 parsing and no chain signature checks.
        let fingerprint = ChainCache.Key(digestOf: ders.flatMap { $0 })
        if let hit = try cached(fingerprint, in: byFingerprint, at: time) { return (hit, fingerprint, true) }

        guard let leaf = Certificate(der: ders[0]) else { throw Rejection(.invalidCertificate, "x5c[0] is not a base64 DER certificate") }
        guard let intermediate = Certificate(der: ders[1]) else {
            throw Rejection(.invalidCertificate, "x5c[1] is not a base64 DER certificate")
        }
        // x5c[2] is parsed only to refuse garbage; it is never used as a trust anchor.
        guard Certificate(der: ders[2]) != nil else { throw Rejection(.invalidCertificate, "x5c[2] is not a base64 DER certificate") }
        guard leaf.hasExtension(oid: Self.leafOID) else {
            throw Rejection(.missingAppleOID, "the leaf lacks Apple's receipt-signing OID \(Self.leafOID)")
        }
        guard intermediate.hasExtension(oid: Self.intermediateOID) else {
            throw Rejection(.missingAppleOID, "the intermediate lacks Apple's WWDR OID \(Self.intermediateOID)")
        }
        let chain: TrustStore.VerifiedChain
        switch trustStore.verify(leaf: leaf, intermediates: [intermediate], at: time, strict: strict) {
        case .success(let verified): chain = verified
        case .failure(.expired): throw Rejection(.certificateExpired, "a certificate of the chain is not valid at \(time)")
        case .failure(.untrusted(let why)): throw Rejection(.untrustedChain, "the chain does not lead to a configured root: \(why)")
        }
        guard chain.length == 3 else {
            throw Rejection(.invalidChainLength, "the verified chain has \(chain.length) certificates, expected leaf, intermediate and root")
        }
        guard let publicKey = leaf.publicKey, publicKey.isP256 else {
            throw Rejection(.invalidCertificate, "the leaf's key is not an EC P-256 key")
        }
        guard let root = chain.root else { throw Rejection(.untrustedChain, "the chain does not end at a configured root") }
        let signer = VerifiedSigner(publicKey: publicKey, leaf: leaf, intermediate: intermediate, root: root)
        return (ChainCache.Entry(signer: signer, validity: chain.validity), fingerprint, false)
    }

    /// Distinct verified chains held.
    public var cachedChains: Int { byFingerprint.count }
}

/// The outcome of a verified chain: the key that checks the signature, and the certificates an
/// online revocation check asks about (leaf by intermediate, intermediate by root).
public struct VerifiedSigner: Sendable {
    public let publicKey: PublicKey
    public let leaf: Certificate
    public let intermediate: Certificate
    public let root: Certificate
}

/// A bounded, expiring LRU of verified chains.
final class ChainCache: Sendable {
    /// The SHA-256 of the whole input (a header, or the three certificates one after the other),
    /// hashed on all of its bytes: every chain ends with the same root, so any part of the input's
    /// tail would be the same for all of them.
    struct Key: Hashable, Sendable {
        let digest: [UInt8]

        init(digestOf bytes: [UInt8]) {
            digest = Digest.sha256(bytes)
        }
    }

    struct Entry: Sendable {
        let signer: VerifiedSigner
        let validity: ClosedRange<Int64>
    }

    private struct Slot {
        var entry: Entry
        var insertedAt: ContinuousClock.Instant
        var lastUsed: UInt64
    }

    private let capacity: Int
    private let ttl: Duration
    private let state = Mutex<(slots: [Key: Slot], tick: UInt64)>(([:], 0))

    init(capacity: Int, ttl: Duration) {
        self.capacity = max(1, capacity)
        self.ttl = ttl
    }

    var count: Int { state.withLock { $0.slots.count } }

    func lookup(_ key: Key) -> Entry? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard var slot = state.slots[key] else { return nil }
            guard now - slot.insertedAt < ttl else {
                state.slots[key] = nil
                return nil
            }
            state.tick += 1
            slot.lastUsed = state.tick
            state.slots[key] = slot
            return slot.entry
        }
    }

    func insert(_ key: Key, _ entry: Entry) {
        let now = ContinuousClock.now
        state.withLock { state in
            state.tick += 1
            if state.slots[key] == nil, state.slots.count >= capacity,
               let oldest = state.slots.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
                state.slots[oldest] = nil
            }
            state.slots[key] = Slot(entry: entry, insertedAt: now, lastUsed: state.tick)
        }
    }
}
