import Synchronization

/// Requests being handled now, refused past a bound. Lock-free: entering is one compare-and-swap
/// (retried only under contention), leaving one subtraction; it never waits for a slot.
final class InFlightLimiter: Sendable {
    let limit: Int
    private let count = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    var current: Int { count.load(ordering: .relaxed) }

    /// Takes a slot, or returns false when all `limit` are taken.
    func tryAcquire() -> Bool {
        var seen = count.load(ordering: .relaxed)
        while seen < limit {
            let (exchanged, original) = count.weakCompareExchange(expected: seen, desired: seen + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            seen = original
        }
        return false
    }

    func release() {
        count.subtract(1, ordering: .releasing)
    }
}
