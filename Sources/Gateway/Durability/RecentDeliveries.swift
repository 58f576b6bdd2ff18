import Synchronization

/// The `ce_id`s accepted in the last `window`, at most `capacity` of them (the oldest go first), so
/// a sender's redelivery is answered 2xx without being published again. Ids are kept as two
/// independently seeded 64-bit hashes: bounded memory per entry whatever the id's length, and a
/// false match (which would drop a new event) has odds around 2^-128 per pair.
public final class RecentDeliveries: Sendable {
    private struct Fingerprint: Hashable {
        let high: UInt64
        let low: UInt64

        init(_ id: String) {
            var first = Hasher()
            first.combine(0x5a5a as UInt16)
            first.combine(id)
            var second = Hasher()
            second.combine(0xa5a5 as UInt16)
            second.combine(id)
            high = UInt64(bitPattern: Int64(first.finalize()))
            low = UInt64(bitPattern: Int64(second.finalize()))
        }
    }

    private struct State {
        var acceptedAt: [Fingerprint: ContinuousClock.Instant] = [:]
        /// Insertion order, as a ring: the slot at `next` holds the oldest entry once the ring is full.
        var order: [Fingerprint?]
        var next = 0
    }

    public let window: Duration
    public let capacity: Int
    private let state: Mutex<State>

    /// `capacity` 0 or `window` zero turns deduplication off.
    public init(window: Duration, capacity: Int) {
        self.window = window
        self.capacity = max(0, capacity)
        state = Mutex(State(order: Array(repeating: nil, count: max(0, capacity))))
    }

    private var isOff: Bool { capacity == 0 || window <= .zero }

    /// True when every id was accepted within the window.
    public func containsAll(_ ids: [String], now: ContinuousClock.Instant = .now) -> Bool {
        guard !isOff, !ids.isEmpty else { return false }
        let fingerprints = ids.map(Fingerprint.init)
        return state.withLock { state in
            fingerprints.allSatisfy { fingerprint in
                guard let at = state.acceptedAt[fingerprint] else { return false }
                return now - at < window
            }
        }
    }

    /// Records ids whose events are now durable.
    public func insert(_ ids: [String], now: ContinuousClock.Instant = .now) {
        guard !isOff, !ids.isEmpty else { return }
        let fingerprints = ids.map(Fingerprint.init)
        state.withLock { state in
            for fingerprint in fingerprints {
                if state.acceptedAt.updateValue(now, forKey: fingerprint) != nil { continue }
                if let evicted = state.order[state.next] { state.acceptedAt.removeValue(forKey: evicted) }
                state.order[state.next] = fingerprint
                state.next = (state.next + 1) % capacity
            }
        }
    }

    public var count: Int { state.withLock { $0.acceptedAt.count } }
}
