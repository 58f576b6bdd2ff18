import Synchronization
import Toolkit

/// The share of each store's API quota Tollgate's own reads back may spend, per app: one token bucket per
/// store and app in this workers process, shared by the at-risk refresh, `POST /v1/purchases/{purchase}/refresh`
/// and the voided purchases poll's pages, each call taken from it. Google counts its quota per minute and
/// per package, Apple per second and per app; with several workers replicas, each has its own share.
public final class StoreQuota: Sendable {
    /// The most calls one read of a purchase makes (`PurchaseRefresher.calls`): every read fits in a bucket.
    static let callsPerRead = 3
    let playPerMinute: Int
    let applePerSecond: Int
    private let buckets = Mutex<[String: RateLimiter]>([:])

    public init(playQueriesPerMinute: Int, appleRequestsPerSecond: Int) {
        playPerMinute = playQueriesPerMinute
        applePerSecond = appleRequestsPerSecond
    }

    /// Takes `calls` calls of `store`'s quota for `app`: true when they may be made now. (Calls taken before a
    /// refusal stay taken: the share errs on the side of the store's quota.)
    public func take(store: String, app: String, calls: Int = 1) -> Bool {
        let limiter = limiter(store: store, app: app)
        return (0..<max(1, calls)).allSatisfy { _ in limiter.take() == nil }
    }

    private func limiter(store: String, app: String) -> RateLimiter {
        buckets.withLock { buckets in
            let name = store + "\u{0}" + app
            if let limiter = buckets[name] { return limiter }
            // A tenth of a minute's worth for Google (its window), a second's for Apple; at least one read's calls.
            let limiter = store == "google"
                ? RateLimiter(perSecond: Double(playPerMinute) / 60, burst: max(Self.callsPerRead, playPerMinute / 10))
                : RateLimiter(perSecond: Double(applePerSecond), burst: max(Self.callsPerRead, applePerSecond))
            buckets[name] = limiter
            return limiter
        }
    }
}
