import Events
import Foundation
import Kafka
import Synchronization
import Verifiers

/// Whether the gateway can make events durable and its senders can verify right now; answers `/readyz`.
/// One cluster probe at a time, its answer kept for a second, so a flood of `/readyz` calls
/// (the port is public) costs one metadata request per second, not one thread each.
public final class Readiness: Sendable {
    private struct State {
        var checkedAt: ContinuousClock.Instant?
        var reachable = false
        var draining = false
        var probe: Task<Bool, Never>?
    }

    private let producer: KafkaProducer
    private let registry: SourceRegistry?
    private let state = Mutex(State())

    /// `registry`: senders that may report problems of their own (Google's key set not loaded).
    public init(producer: KafkaProducer, registry: SourceRegistry? = nil) {
        self.producer = producer
        self.registry = registry
    }

    /// Lets senders do their start-up work (fetch a key set) before the first request needs it.
    public func warmUp() async {
        _ = await registry?.readinessProblems(now: Self.now)
    }

    /// Marks the gateway as shutting down: `/readyz` fails first so load balancers stop sending.
    public func startDraining() { state.withLock { $0.draining = true } }

    public func check() async -> (ready: Bool, detail: String) {
        if let fatal = producer.fatalError { return (false, "kafka producer failed fatally: \(fatal)") }
        enum Step { case answer(Bool), draining, wait(Task<Bool, Never>) }
        let step: Step = state.withLock { state in
            if state.draining { return .draining }
            if let at = state.checkedAt, ContinuousClock.now - at < .seconds(1) { return .answer(state.reachable) }
            if let probe = state.probe { return .wait(probe) }
            let probe = Task { [producer] in await producer.isClusterReachable(timeoutMs: 1_000) }
            state.probe = probe
            return .wait(probe)
        }
        let reachable: Bool
        switch step {
        case .draining: return (false, "shutting down")
        case .answer(let cached): reachable = cached
        case .wait(let probe):
            reachable = await probe.value
            state.withLock { state in
                state.probe = nil
                state.checkedAt = .now
                state.reachable = reachable
            }
        }
        guard reachable else { return (false, "kafka unreachable") }
        let problems = await registry?.readinessProblems(now: Self.now) ?? []
        return problems.isEmpty ? (true, "kafka reachable") : (false, problems.joined(separator: "; "))
    }

    private static var now: Timestamp {
        Timestamp.now
    }
}
