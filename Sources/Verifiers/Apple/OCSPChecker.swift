import Rejections
import Synchronization
import Toolkit

/// Online revocation checks (RFC 6960): asks a certificate's OCSP responder whether it is
/// revoked, and fails closed. Answers are cached until the responder's nextUpdate (at most
/// `maxCacheAge`), so a steady stream asks each responder about once per update period. Only
/// chains already verified to a configured root get here, so forged certificates cannot make
/// Tollgate call out.
public final class OCSPChecker: Sendable {
    public struct Settings: Sendable {
        public var timeout: Duration
        /// Ask this URL instead of the responder the certificate names (AIA), e.g. a caching proxy.
        public var responderOverride: String?
        public var maxCacheAge: Int64
        /// How long a good answer without nextUpdate is trusted.
        public var defaultCacheAge: Int64

        public init(timeout: Duration = .seconds(5), responderOverride: String? = nil,
                    maxCacheAge: Int64 = 3_600, defaultCacheAge: Int64 = 300) {
            self.timeout = timeout
            self.responderOverride = responderOverride
            self.maxCacheAge = maxCacheAge
            self.defaultCacheAge = defaultCacheAge
        }
    }

    private let fetcher: any HTTPFetcher
    private let trustStore: TrustStore
    private let settings: Settings
    private let cache = Mutex<[[UInt8]: Cached]>([:])
    private static let capacity = 1_024
    private static let maxResponseBytes = 64 * 1_024

    private struct Cached {
        let revoked: Bool
        let until: Int64
    }

    public init(fetcher: any HTTPFetcher, trustStore: TrustStore, settings: Settings = Settings()) {
        self.fetcher = fetcher
        self.trustStore = trustStore
        self.settings = settings
    }

    /// Throws `certificate_revoked` for a revoked certificate and `revocation_check_failed` when
    /// no valid answer could be had (unreachable, timed out, unsigned, stale, status unknown).
    public func check(_ certificate: Certificate, issuer: Certificate, now: Int64) async throws(Rejection) {
        let key = certificate.sha256Fingerprint + issuer.sha256Fingerprint
        if let cached = cache.withLock({ $0[key] }), cached.until > now {
            if cached.revoked { throw Self.revoked(certificate) }
            return
        }
        guard let query = OCSPQuery(certificate: certificate, issuer: issuer, responderOverride: settings.responderOverride) else {
            throw Rejection(.revocationCheckFailed, "\(Self.name(certificate)) names no OCSP responder")
        }
        let response: HTTPFetchResponse
        do {
            response = try await fetcher.fetch(HTTPFetchRequest(
                url: query.responderURL, method: "POST",
                headers: [("Content-Type", "application/ocsp-request"), ("Accept", "application/ocsp-response")],
                body: query.requestDER, timeout: settings.timeout))
        } catch {
            throw Rejection(.revocationCheckFailed, "OCSP responder \(query.responderURL): \(error)")
        }
        guard response.status == 200, response.body.count <= Self.maxResponseBytes else {
            throw Rejection(.revocationCheckFailed, "OCSP responder \(query.responderURL) answered HTTP \(response.status)")
        }
        switch query.evaluate(responseDER: response.body, trustStore: trustStore) {
        case .good(let nextUpdate):
            let until = min(nextUpdate ?? now + settings.defaultCacheAge, now + settings.maxCacheAge)
            remember(key, Cached(revoked: false, until: until), now: now)
        case .revoked:
            remember(key, Cached(revoked: true, until: now + settings.maxCacheAge), now: now)
            throw Self.revoked(certificate)
        case .unknown:
            throw Rejection(.revocationCheckFailed, "OCSP responder \(query.responderURL) does not know \(Self.name(certificate))")
        case .invalid(let why):
            throw Rejection(.revocationCheckFailed, "OCSP responder \(query.responderURL): \(why)")
        }
    }

    public var cachedAnswers: Int { cache.withLock { $0.count } }

    private func remember(_ key: [UInt8], _ answer: Cached, now: Int64) {
        cache.withLock { cache in
            if cache.count >= Self.capacity {
                cache = cache.filter { $0.value.until > now }
                if cache.count >= Self.capacity { cache.removeAll() }
            }
            cache[key] = answer
        }
    }

    private static func revoked(_ certificate: Certificate) -> Rejection {
        Rejection(.certificateRevoked, "\(name(certificate)) is revoked")
    }

    private static func name(_ certificate: Certificate) -> String {
        "certificate \"\(certificate.commonName ?? "?")\""
    }
}
