import Synchronization

/// One caller's allowance (a sender's, a credential's) as a token bucket: `burst` requests at once, refilled at `perSecond`.
/// The state is two numbers behind one lock, updated in place.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    public let perSecond: Double
    public let burst: Double
    private let bucket: Mutex<Bucket>

    public init(perSecond: Double, burst: Int, now: ContinuousClock.Instant = .now) {
        self.perSecond = perSecond
        self.burst = Double(burst)
        bucket = Mutex(Bucket(tokens: Double(burst), updated: now))
    }

    /// Takes one token: nil when admitted, else the whole seconds until a token is available (at least 1).
    public func take(now: ContinuousClock.Instant = .now) -> Int? {
        bucket.withLock { bucket in
            refill(&bucket, now: now)
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return retryAfter(bucket)
        }
    }

    /// As `take`, without taking: nil while a token is there.
    public func check(now: ContinuousClock.Instant = .now) -> Int? {
        bucket.withLock { bucket in
            refill(&bucket, now: now)
            return bucket.tokens >= 1 ? nil : retryAfter(bucket)
        }
    }

    private func refill(_ bucket: inout Bucket, now: ContinuousClock.Instant) {
        // A caller that read the clock earlier but got the lock later must not move time back.
        if now > bucket.updated {
            let (seconds, attoseconds) = (now - bucket.updated).components
            let elapsed = Double(seconds) + Double(attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + elapsed * perSecond)
            bucket.updated = now
        }
    }

    private func retryAfter(_ bucket: Bucket) -> Int {
        max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
    }
}
