import Synchronization

/// Verifies an `x5c` header to a configured root, Apple's way: exactly three certificates, the
/// chain built from `x5c[0]` through `x5c[1]` to a configured root (`x5c[2]` is ignored, never
/// trusted), Apple's marker OIDs on leaf and intermediate, validity at the effective time.
/// Verified pairs are cached, so a steady stream costs one ES256 check per JWS.
public final class AppleChainVerifier: Sendable {
    static let leafOID = "1.2.840.113635.100.6.11.1"
    static let intermediateOID = "1.2.840.113635.100.6.2.1"

    private let trustStore: TrustStore
    private let strict: Bool
    private let cache: ChainCache

    public init(trustStore: TrustStore, strict: Bool = false, cacheCapacity: Int = 256, cacheTTL: Duration = .seconds(3_600)) {
        self.trustStore = trustStore
        self.strict = strict
        self.cache = ChainCache(capacity: cacheCapacity, ttl: cacheTTL)
    }

    /// The leaf's public key once the chain is verified at `time` (seconds since 1970).
    public func verify(x5c: JSONValue?, at time: Int64) throws(Rejection) -> PublicKey {
        guard let x5c else { throw Rejection(.invalidCertificate, "the JWS header has no x5c") }
        guard case .array(let items) = x5c else { throw Rejection(.invalidCertificate, "x5c is not an array") }
        guard items.count == 3 else {
            throw Rejection(.invalidChainLength, "x5c must hold exactly 3 certificates, found \(items.count)")
        }
        guard let leafText = items[0].string, let intermediateText = items[1].string, items[2].string != nil else {
            throw Rejection(.invalidCertificate, "x5c entries must be base64 strings")
        }
        let key = ChainCache.Key(leaf: leafText, intermediate: intermediateText)
        if let hit = cache.lookup(key) {
            // A cached chain is still only good inside every certificate's validity.
            guard hit.validity.contains(time) else {
                throw Rejection(.certificateExpired, "a certificate of the chain is not valid at \(time)")
            }
            return hit.publicKey
        }

        guard let leafDER = Base64.decodeStandard(leafText), let leaf = Certificate(der: leafDER) else {
            throw Rejection(.invalidCertificate, "x5c[0] is not a base64 DER certificate")
        }
        guard let intermediateDER = Base64.decodeStandard(intermediateText), let intermediate = Certificate(der: intermediateDER) else {
            throw Rejection(.invalidCertificate, "x5c[1] is not a base64 DER certificate")
        }
        // x5c[2] is decoded only to refuse garbage; it is never used as a trust anchor.
        guard let rootText = items[2].string, let rootDER = Base64.decodeStandard(rootText), Certificate(der: rootDER) != nil else {
            throw Rejection(.invalidCertificate, "x5c[2] is not a base64 DER certificate")
        }
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
        cache.insert(key, ChainCache.Entry(publicKey: publicKey, validity: chain.validity))
        return publicKey
    }

    public var cachedChains: Int { cache.count }
}

/// A bounded, expiring LRU of verified (leaf, intermediate) pairs.
final class ChainCache: Sendable {
    struct Key: Hashable, Sendable {
        let leaf: String
        let intermediate: String
    }

    struct Entry: Sendable {
        let publicKey: PublicKey
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
