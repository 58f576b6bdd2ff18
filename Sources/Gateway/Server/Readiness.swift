import Kafka
import Synchronization

/// Whether the gateway can make events durable right now; answers `/readyz`.
/// The cluster probe is cached briefly so a tight probe loop does not become metadata load.
public final class Readiness: Sendable {
    private let producer: KafkaProducer
    private let state = Mutex<(checkedAt: ContinuousClock.Instant?, reachable: Bool, draining: Bool)>((nil, false, false))

    public init(producer: KafkaProducer) {
        self.producer = producer
    }

    /// Marks the gateway as shutting down: `/readyz` fails first so load balancers stop sending.
    public func startDraining() { state.withLock { $0.draining = true } }

    public func check() async -> (ready: Bool, detail: String) {
        let cached = state.withLock { s -> Bool? in
            guard !s.draining else { return false }
            if let at = s.checkedAt, ContinuousClock.now - at < .seconds(1) { return s.reachable }
            return nil
        }
        if state.withLock({ $0.draining }) { return (false, "shutting down") }
        let reachable: Bool
        if let cached { reachable = cached } else {
            reachable = await producer.isClusterReachable(timeoutMs: 1_000)
            state.withLock { $0.checkedAt = .now; $0.reachable = reachable }
        }
        return reachable ? (true, "kafka reachable") : (false, "kafka unreachable")
    }
}
